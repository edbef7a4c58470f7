// Package webhook holds Gantry's admission webhooks: validation for every
// kind Gantry serves and defaulting for TrainJob. Each family calls the
// validation its controller uses (Ray's pkg/controller/ray/validation, the Trainer runtime
// framework's Validate), so a spec admitted here is one the controller
// accepts; the controllers keep validating on their own for clusters that
// run without webhooks.
//
// Every rejection is an apierrors.NewInvalid built from a field.ErrorList,
// so clients see the field and the rule, e.g.
//
//	The RayCluster "x" is invalid: spec.workerGroupSpecs[0].minReplicas: Invalid value: -1: ...
//
// Rules shared by all validators: an update of an object that is being
// deleted is always admitted (a finalizer must be removable from an object
// created before the webhook existed), and DELETE is never validated.
package webhook

//
// # Ray updates fail open
//
// The RayCluster, RayJob and RayService webhooks are two configurations
// each over one handler: creation (vraycluster.ray.io, vrayjob.ray.io,
// vrayservice.ray.io) with failurePolicy Fail, and updates
// (vraycluster-update.ray.io, vrayjob-update.ray.io,
// vrayservice-update.ray.io) with failurePolicy Ignore. Updates to these
// kinds come from other controllers that must not wait on Gantry: the Ray
// autoscaler patches replicas and workersToDelete, Kueue toggles suspend.
// KubeRay ships no webhook by default, so its users' autoscalers and Kueue
// never depend on the operator being up. While the manager is up, an
// invalid update is refused with the same message as before; while it is
// down, the update is admitted and the reconciler meets it as it does in
// KubeRay without a webhook: a RayCluster gets a Warning event and nothing
// else changes (its Pods run on), a RayJob turns ValidationFailed, a
// RayService gets a Warning event and Ready=False (ValidationFailed). A
// creation while the manager is down is refused, so nothing is admitted
// that was never checked. The chart's webhook.updateFailurePolicy sets the
// update policy (Fail restores fail-closed updates).
