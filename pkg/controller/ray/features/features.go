package features

import "k8s.io/component-base/featuregate"

// KubeRay's feature gates that the RayCluster controller reads, with
// KubeRay's names, so a user's --feature-gates carries over.
const (
	// RayClusterStatusConditions is KubeRay's feature gate for
	// status.conditions (beta, on by default since KubeRay 1.3). With it off
	// no condition is touched and only status.state reports progress.
	RayClusterStatusConditions featuregate.Feature = "RayClusterStatusConditions"
	// RayMultiHostIndexing is KubeRay's feature gate for the replica-name,
	// replica-index and host-index labels of multi-host worker groups and
	// for managing each replica's numOfHosts Pods as one unit.
	RayMultiHostIndexing featuregate.Feature = "RayMultiHostIndexing"
	// RayJobDeletionPolicy is KubeRay's gate that allows suspending single
	// worker groups (RayJob's deletion policy uses it); beta and on by
	// default since KubeRay 1.6.
	RayJobDeletionPolicy featuregate.Feature = "RayJobDeletionPolicy"
)

// FeatureGates are the gates the RayCluster controller reads, for the
// workload's gate registration.
func FeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		RayClusterStatusConditions: {Default: true, PreRelease: featuregate.Beta},
		RayMultiHostIndexing:       {Default: true, PreRelease: featuregate.Beta},
		RayJobDeletionPolicy:       {Default: true, PreRelease: featuregate.Beta},
	}
}
