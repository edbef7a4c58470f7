// Package submitter builds what a RayJob hands to Ray: the `ray job submit`
// shell line, the Pod template of the K8sJobMode submitter Job and the Job
// itself, the submitter container SidecarMode adds to the head Pod, and the
// RayCluster a RayJob creates for itself. It follows KubeRay v1.7.0's RayJob
// controller, flag for flag and label for label, so that a RayJob behaves the
// same under Gantry as under KubeRay.
//
// Contract:
//   - Everything here is pure: it reads the RayJob, the RayCluster and
//     Options and returns new objects. It never modifies its inputs and never
//     talks to the API server, so the controller decides when to create.
//   - The RayJob's status must already hold the submission ID (JobID) and,
//     for K8sJobMode, the dashboard address; both go into the command and
//     the submitter's environment as they are.
//   - Input KubeRay would crash on (no head container, a submitter template
//     without containers, a mode that submits nothing) is an error here;
//     input KubeRay rejects (a runtimeEnvYAML that is not YAML, metadata
//     with a rayVersion below 2.6.0) is an error with the same meaning.
//   - Options carries what KubeRay reads from its environment and feature
//     gates; the zero value is KubeRay's default.
package submitter
