package features

import (
	"testing"

	"k8s.io/component-base/featuregate"
)

// TestFeatureGatesAsKubeRay: the gates' defaults and stages are KubeRay
// v1.6.2's (ray-operator/pkg/features/features.go), so a cluster behaves
// the same under either operator with no --feature-gates.
func TestFeatureGatesAsKubeRay(t *testing.T) {
	want := map[featuregate.Feature]featuregate.FeatureSpec{
		RayClusterStatusConditions: {Default: true, PreRelease: featuregate.Beta},
		RayJobDeletionPolicy:       {Default: true, PreRelease: featuregate.Beta},
		RayMultiHostIndexing:       {Default: true, PreRelease: featuregate.Beta},
	}
	got := FeatureGates()
	if len(got) != len(want) {
		t.Errorf("%d gates, want %d: %v", len(got), len(want), got)
	}
	for f, spec := range want {
		if g, ok := got[f]; !ok || g.Default != spec.Default || g.PreRelease != spec.PreRelease {
			t.Errorf("%s = %+v, KubeRay v1.6.2 has %+v", f, g, spec)
		}
	}
}
