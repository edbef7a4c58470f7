package slurm

import "k8s.io/component-base/featuregate"

// SlurmrestdURLOverride makes the manager honour a RestApi's
// gantry.dev/slurmrestd-url annotation (slinkyv1beta1.AnnotationSlurmrestdURL):
// for a manager running outside the cluster (`make run`, the e2e tier),
// which cannot resolve the RestApi Service's cluster DNS name. Off by
// default, since anyone who may edit a RestApi could otherwise point the
// manager's Slurm tokens at a server of their choosing.
const SlurmrestdURLOverride featuregate.Feature = "SlurmrestdURLOverride"

// FeatureGates are the gates the Slurm reconcilers read, for the
// workload's gate registration.
func FeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		SlurmrestdURLOverride: {Default: false, PreRelease: featuregate.Alpha},
	}
}
