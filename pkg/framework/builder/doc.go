// Package builder holds pure builders for object metadata, pod templates and
// the common owned objects (Services, PDBs, ConfigMaps). Builders never mutate
// their inputs and never return values that share memory with them.
//
// Merge contract (MergePodTemplate, MergeContainer, MergeLabels): the user's
// pod template or container is applied to the operator's as a Kubernetes
// strategic merge patch (operator's value = document, user's = patch, as
// Slinky's slurm-operator does since v1.1.0). Keyed lists merge by their API
// patch keys: containers, init containers, volumes and env by name, ports by
// containerPort, volume mounts by mountPath; other lists are replaced by the
// user's; objects merge field by field. Labels and annotations are the
// exception: the operator's keys win because selectors and hashes depend on
// them, and the user's other keys are kept. Gantry adds a few patch
// directives so that the result stays valid and ordered (operator elements
// first, a user volume or one-of choice replacing the operator's, a named
// port moving); MergePodTemplate lists them. Directives written by users do
// not survive the typed decoding of the CRDs.
package builder
