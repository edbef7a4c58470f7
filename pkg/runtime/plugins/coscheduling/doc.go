// Package coscheduling is the gang-scheduling policy for the scheduler-plugins
// coscheduling plugin: one PodGroup (scheduling.x-k8s.io/v1alpha1) per
// TrainJob, sized to all of its pods, and the pod-group label on every pod.
//
// The PodGroup CRD is optional. When it is not installed the plugin does
// nothing and leaves a warning in Info instead of failing the TrainJob, so a
// runtime with a coscheduling policy still runs (without gang guarantees)
// on a cluster without scheduler-plugins. The PodGroup is built as
// unstructured so Gantry does not depend on scheduler-plugins' module.
package coscheduling
