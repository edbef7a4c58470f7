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
	// SidecarSubmitterRestart is KubeRay's (v1.7, alpha) gate that lets the
	// SidecarMode submitter container restart on failure, up to
	// submitterConfig.backoffLimit times (per-container restart rules,
	// Kubernetes 1.35+), instead of failing the RayJob at once.
	SidecarSubmitterRestart featuregate.Feature = "SidecarSubmitterRestart"
	// RayDashboardURLOverride is Gantry's: the manager honours a
	// RayCluster's gantry.dev/ray-dashboard-url annotation (which a RayJob
	// passes on to its cluster), for a manager that runs outside the
	// cluster (`make run`, the e2e tier) and cannot resolve the head
	// Service's DNS name. Off by default: anyone who may edit a RayCluster
	// could otherwise point the manager at a server of their choosing.
	RayDashboardURLOverride featuregate.Feature = "RayDashboardURLOverride"
)

// FeatureGates are the gates the RayCluster controller reads, for the
// workload's gate registration.
func FeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		RayClusterStatusConditions: {Default: true, PreRelease: featuregate.Beta},
		RayMultiHostIndexing:       {Default: true, PreRelease: featuregate.Beta},
		RayJobDeletionPolicy:       {Default: true, PreRelease: featuregate.Beta},
		SidecarSubmitterRestart:    {Default: false, PreRelease: featuregate.Alpha},
		RayDashboardURLOverride:    {Default: false, PreRelease: featuregate.Alpha},
	}
}
