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
