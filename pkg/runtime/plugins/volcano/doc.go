// Package volcano is the gang-scheduling policy for the Volcano scheduler:
// one PodGroup (scheduling.volcano.sh/v1beta1) per TrainJob, named after
// it and sized to all of its pods, and on every pod the annotation by which
// Volcano finds the group.
//
// Like coscheduling, the PodGroup CRD is optional: when Volcano is not
// installed the plugin renders nothing and leaves a warning in Info, so the
// job still runs (without gang guarantees). The PodGroup is built as
// unstructured so that Gantry does not depend on Volcano's API module.
package volcano
