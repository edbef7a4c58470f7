package v1

import (
	"math"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// group builds a worker group; nil pointers mean "field omitted".
func group(replicas, minReplicas, maxReplicas *int32, hosts int32, suspend bool) WorkerGroupSpec {
	return WorkerGroupSpec{
		GroupName:   "g",
		Replicas:    replicas,
		MinReplicas: minReplicas,
		MaxReplicas: maxReplicas,
		NumOfHosts:  hosts,
		Suspend:     ptr.To(suspend),
	}
}

func TestWorkerGroupDesiredReplicasAndPods(t *testing.T) {
	cases := []struct {
		name         string
		group        WorkerGroupSpec
		wantReplicas int32
		wantPods     int32
	}{
		{"within bounds", group(ptr.To[int32](3), ptr.To[int32](1), ptr.To[int32](10), 1, false), 3, 3},
		{"below min is raised", group(ptr.To[int32](0), ptr.To[int32](2), ptr.To[int32](10), 1, false), 2, 2},
		{"above max is lowered", group(ptr.To[int32](15), ptr.To[int32](1), ptr.To[int32](10), 1, false), 10, 10},
		{"multi-host multiplies", group(ptr.To[int32](3), ptr.To[int32](1), ptr.To[int32](10), 4, false), 3, 12},
		{"suspended is zero", group(ptr.To[int32](3), ptr.To[int32](1), ptr.To[int32](10), 1, true), 0, 0},
		{"missing replicas means min", group(nil, ptr.To[int32](2), ptr.To[int32](10), 1, false), 2, 2},
		{"all omitted reads CRD defaults", group(nil, nil, nil, 0, false), 0, 0},
		{"missing max is unbounded", group(ptr.To[int32](1000), nil, nil, 0, false), 1000, 1000},
		{"min above max: min wins", group(ptr.To[int32](5), ptr.To[int32](8), ptr.To[int32](3), 1, false), 8, 8},
		{"pods saturate instead of wrapping", group(ptr.To[int32](math.MaxInt32), nil, nil, 2, false), math.MaxInt32, math.MaxInt32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.group.DesiredReplicas(); got != tc.wantReplicas {
				t.Errorf("DesiredReplicas() = %d, want %d", got, tc.wantReplicas)
			}
			if got := tc.group.DesiredPods(); got != tc.wantPods {
				t.Errorf("DesiredPods() = %d, want %d", got, tc.wantPods)
			}
		})
	}
}

func TestWorkerGroupHosts(t *testing.T) {
	cases := []struct {
		numOfHosts int32
		want       int32
	}{
		{0, 1}, // unset in Go: the server would have stored the default 1
		{1, 1},
		{4, 4},
	}
	for _, tc := range cases {
		w := WorkerGroupSpec{NumOfHosts: tc.numOfHosts}
		if got := w.Hosts(); got != tc.want {
			t.Errorf("Hosts() with numOfHosts=%d = %d, want %d", tc.numOfHosts, got, tc.want)
		}
	}
}

func TestClusterWorkerPodTotals(t *testing.T) {
	cases := []struct {
		name                          string
		groups                        []WorkerGroupSpec
		wantDesired, wantMin, wantMax int32
	}{
		{
			name:   "no groups",
			groups: nil,
		},
		{
			name: "sums over groups times hosts",
			groups: []WorkerGroupSpec{
				group(ptr.To[int32](2), ptr.To[int32](1), ptr.To[int32](5), 1, false),
				group(ptr.To[int32](1), ptr.To[int32](1), ptr.To[int32](2), 4, false),
			},
			wantDesired: 2 + 4, wantMin: 1 + 4, wantMax: 5 + 8,
		},
		{
			name: "suspended groups count nowhere",
			groups: []WorkerGroupSpec{
				group(ptr.To[int32](2), ptr.To[int32](1), ptr.To[int32](5), 1, false),
				group(ptr.To[int32](3), ptr.To[int32](3), ptr.To[int32](3), 2, true),
			},
			wantDesired: 2, wantMin: 1, wantMax: 5,
		},
		{
			// KubeRay's int32 sum wraps negative here; the status would show
			// a negative maximum.
			name: "default max saturates across groups",
			groups: []WorkerGroupSpec{
				group(ptr.To[int32](1), nil, nil, 1, false),
				group(ptr.To[int32](1), nil, nil, 2, false),
			},
			wantDesired: 1 + 2, wantMin: 0, wantMax: math.MaxInt32,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := RayClusterSpec{WorkerGroupSpecs: tc.groups}
			if got := spec.DesiredWorkerPods(); got != tc.wantDesired {
				t.Errorf("DesiredWorkerPods() = %d, want %d", got, tc.wantDesired)
			}
			if got := spec.MinWorkerPods(); got != tc.wantMin {
				t.Errorf("MinWorkerPods() = %d, want %d", got, tc.wantMin)
			}
			if got := spec.MaxWorkerPods(); got != tc.wantMax {
				t.Errorf("MaxWorkerPods() = %d, want %d", got, tc.wantMax)
			}
		})
	}
}

func TestExternalManager(t *testing.T) {
	cases := []struct {
		name        string
		managedBy   *string
		wantManager string
		wantOK      bool
	}{
		{"unset is ours", nil, "", false},
		{"kuberay-operator is ours", ptr.To(KubeRayController), "", false},
		{"multikueue is external", ptr.To(MultiKueueController), MultiKueueController, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := RayClusterSpec{ManagedBy: tc.managedBy}
			manager, ok := spec.ExternalManager()
			if manager != tc.wantManager || ok != tc.wantOK {
				t.Errorf("ExternalManager() = (%q, %v), want (%q, %v)", manager, ok, tc.wantManager, tc.wantOK)
			}
		})
	}
}

func TestGCSFaultToleranceEnabled(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		options     *GcsFaultToleranceOptions
		want        bool
	}{
		{"neither", nil, nil, false},
		{"options set", nil, &GcsFaultToleranceOptions{RedisAddress: "redis:6379"}, true},
		{"annotation true", map[string]string{RayFTEnabledAnnotationKey: "true"}, nil, true},
		{"annotation is case-insensitive", map[string]string{RayFTEnabledAnnotationKey: "True"}, nil, true},
		{"annotation false", map[string]string{RayFTEnabledAnnotationKey: "false"}, nil, false},
		{"annotation garbage", map[string]string{RayFTEnabledAnnotationKey: "yes"}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := RayCluster{
				ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations},
				Spec:       RayClusterSpec{GcsFaultToleranceOptions: tc.options},
			}
			if got := rc.GCSFaultToleranceEnabled(); got != tc.want {
				t.Errorf("GCSFaultToleranceEnabled() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSpecSwitches(t *testing.T) {
	recreate := RayClusterRecreate
	cases := []struct {
		name            string
		spec            RayClusterSpec
		wantSuspended   bool
		wantAutoscaling bool
		wantUpgrade     RayClusterUpgradeType
	}{
		{"zero spec", RayClusterSpec{}, false, false, RayClusterUpgradeNone},
		{"explicit false", RayClusterSpec{Suspend: ptr.To(false), EnableInTreeAutoscaling: ptr.To(false)}, false, false, RayClusterUpgradeNone},
		{"all on", RayClusterSpec{
			Suspend:                 ptr.To(true),
			EnableInTreeAutoscaling: ptr.To(true),
			UpgradeStrategy:         &RayClusterUpgradeStrategy{Type: &recreate},
		}, true, true, RayClusterRecreate},
		{"strategy without type", RayClusterSpec{UpgradeStrategy: &RayClusterUpgradeStrategy{}}, false, false, RayClusterUpgradeNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.spec.IsSuspended(); got != tc.wantSuspended {
				t.Errorf("IsSuspended() = %v, want %v", got, tc.wantSuspended)
			}
			if got := tc.spec.AutoscalingEnabled(); got != tc.wantAutoscaling {
				t.Errorf("AutoscalingEnabled() = %v, want %v", got, tc.wantAutoscaling)
			}
			if got := tc.spec.UpgradeType(); got != tc.wantUpgrade {
				t.Errorf("UpgradeType() = %q, want %q", got, tc.wantUpgrade)
			}
		})
	}
}
