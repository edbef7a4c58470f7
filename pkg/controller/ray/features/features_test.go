package features

import (
	"testing"

	"k8s.io/component-base/featuregate"
)

// TestFeatureGatesAsKubeRay: the gates' defaults and stages are KubeRay
// v1.7.0's (ray-operator/pkg/features/features.go), so a cluster behaves
// the same under either operator with no --feature-gates; Gantry's own
// RayDashboardURLOverride is off.
func TestFeatureGatesAsKubeRay(t *testing.T) {
	want := map[featuregate.Feature]featuregate.FeatureSpec{
		RayClusterStatusConditions: {Default: true, PreRelease: featuregate.Beta},
		RayJobDeletionPolicy:       {Default: true, PreRelease: featuregate.Beta},
		RayMultiHostIndexing:       {Default: true, PreRelease: featuregate.Beta},
		SidecarSubmitterRestart:    {Default: false, PreRelease: featuregate.Alpha},
		RayDashboardURLOverride:    {Default: false, PreRelease: featuregate.Alpha},
	}
	got := FeatureGates()
	if len(got) != len(want) {
		t.Errorf("%d gates, want %d: %v", len(got), len(want), got)
	}
	for f, spec := range want {
		if g, ok := got[f]; !ok || g.Default != spec.Default || g.PreRelease != spec.PreRelease {
			t.Errorf("%s = %+v, want %+v", f, g, spec)
		}
	}
}
