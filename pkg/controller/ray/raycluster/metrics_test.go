package raycluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

func newTestMetrics(t *testing.T) (*ClusterMetrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewClusterMetrics(reg)
	if err != nil {
		t.Fatalf("NewClusterMetrics: %v", err)
	}
	return m, reg
}

func metricsCluster(name, uid string, provisioned bool, labels map[string]string) *rayv1.RayCluster {
	status := metav1.ConditionFalse
	if provisioned {
		status = metav1.ConditionTrue
	}
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID(uid), Labels: labels,
			CreationTimestamp: metav1.NewTime(statusTestNow),
		},
		Status: rayv1.RayClusterStatus{Conditions: []metav1.Condition{{
			Type: string(rayv1.RayClusterProvisioned), Status: status, Reason: "r",
		}}},
	}
}

// gatheredSeries renders the named metrics in reg as sorted
// `name{k="v",...} value` lines. (client_golang's testutil would do, but it
// needs a module go.mod does not list.)
func gatheredSeries(t *testing.T, reg *prometheus.Registry, names ...string) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var lines []string
	for _, f := range families {
		if !slices.Contains(names, f.GetName()) {
			continue
		}
		for _, metric := range f.GetMetric() {
			var labels []string
			for _, l := range metric.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %g", f.GetName(), strings.Join(labels, ","), metric.GetGauge().GetValue()))
		}
	}
	slices.Sort(lines)
	return lines
}

func assertMetrics(t *testing.T, reg *prometheus.Registry, want []string, names ...string) {
	t.Helper()
	slices.Sort(want)
	if got := gatheredSeries(t, reg, names...); !slices.Equal(got, want) {
		t.Errorf("series\n got %q\nwant %q", got, want)
	}
}

func TestClusterMetricsRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewClusterMetrics(reg); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if _, err := NewClusterMetrics(reg); err == nil {
		t.Fatal("registering the same metrics twice on one registry must fail")
	}
}

func TestSetInfo(t *testing.T) {
	m, reg := newTestMetrics(t)
	m.SetInfo(metricsCluster("plain", "u1", false, nil))
	m.SetInfo(metricsCluster("from-job", "u2", true, map[string]string{rayv1.RayOriginatedFromCRDLabelKey: "RayJob"}))
	assertMetrics(t, reg, []string{
		`kuberay_cluster_info{name="from-job",namespace="ns",owner_kind="RayJob",uid="u2"} 1`,
		`kuberay_cluster_info{name="plain",namespace="ns",owner_kind="None",uid="u1"} 1`,
		`kuberay_cluster_condition_provisioned{condition="false",name="plain",namespace="ns",uid="u1"} 1`,
		`kuberay_cluster_condition_provisioned{condition="true",name="from-job",namespace="ns",uid="u2"} 1`,
	}, "kuberay_cluster_info", "kuberay_cluster_condition_provisioned")

	// The condition flips and the other cluster is re-created under a new
	// uid: the old series are replaced, not kept beside the new ones.
	m.SetInfo(metricsCluster("plain", "u1", true, nil))
	m.SetInfo(metricsCluster("from-job", "u3", true, map[string]string{rayv1.RayOriginatedFromCRDLabelKey: "RayJob"}))
	assertMetrics(t, reg, []string{
		`kuberay_cluster_info{name="from-job",namespace="ns",owner_kind="RayJob",uid="u3"} 1`,
		`kuberay_cluster_info{name="plain",namespace="ns",owner_kind="None",uid="u1"} 1`,
		`kuberay_cluster_condition_provisioned{condition="true",name="from-job",namespace="ns",uid="u3"} 1`,
		`kuberay_cluster_condition_provisioned{condition="true",name="plain",namespace="ns",uid="u1"} 1`,
	}, "kuberay_cluster_info", "kuberay_cluster_condition_provisioned")
}

func TestObserveStatusWrite(t *testing.T) {
	provisionedAfter := 90 * time.Second
	tests := []struct {
		name           string
		oldProvisioned bool
		oldConditions  bool
		newProvisioned bool
		wantObserved   bool
	}{
		{name: "false to true", oldConditions: true, newProvisioned: true, wantObserved: true},
		{name: "unset to true", newProvisioned: true, wantObserved: true},
		{name: "true stays true", oldConditions: true, oldProvisioned: true, newProvisioned: true},
		{name: "still provisioning", oldConditions: true},
		{name: "reset by a suspend", oldConditions: true, oldProvisioned: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, reg := newTestMetrics(t)
			updated := metricsCluster("rc", "u1", tc.newProvisioned, nil)
			var old rayv1.RayClusterStatus
			if tc.oldConditions {
				old = metricsCluster("rc", "u1", tc.oldProvisioned, nil).Status
			}
			m.ObserveStatusWrite(updated, old, statusTestNow.Add(provisionedAfter))
			var want []string
			if tc.wantObserved {
				want = []string{`kuberay_cluster_provisioned_duration_seconds{name="rc",namespace="ns",uid="u1"} 90`}
			}
			assertMetrics(t, reg, want, "kuberay_cluster_provisioned_duration_seconds")
		})
	}
}

func TestForget(t *testing.T) {
	m, reg := newTestMetrics(t)
	for _, c := range []*rayv1.RayCluster{
		metricsCluster("gone", "u1", true, nil),
		metricsCluster("kept", "u2", true, nil),
	} {
		m.SetInfo(c)
		m.ObserveProvisioned(c, 12)
	}
	// A series left by an earlier incarnation with another uid goes too.
	m.ObserveProvisioned(metricsCluster("gone", "u0", true, nil), 30)

	m.Forget("ns", "gone")

	all := []string{"kuberay_cluster_info", "kuberay_cluster_condition_provisioned", "kuberay_cluster_provisioned_duration_seconds"}
	assertMetrics(t, reg, []string{
		`kuberay_cluster_info{name="kept",namespace="ns",owner_kind="None",uid="u2"} 1`,
		`kuberay_cluster_condition_provisioned{condition="true",name="kept",namespace="ns",uid="u2"} 1`,
		`kuberay_cluster_provisioned_duration_seconds{name="kept",namespace="ns",uid="u2"} 12`,
	}, all...)

	// No stale bookkeeping survives: a new cluster of the same name
	// publishes exactly its own series.
	m.SetInfo(metricsCluster("gone", "u9", false, nil))
	assertMetrics(t, reg, []string{
		`kuberay_cluster_info{name="gone",namespace="ns",owner_kind="None",uid="u9"} 1`,
		`kuberay_cluster_info{name="kept",namespace="ns",owner_kind="None",uid="u2"} 1`,
		`kuberay_cluster_condition_provisioned{condition="false",name="gone",namespace="ns",uid="u9"} 1`,
		`kuberay_cluster_condition_provisioned{condition="true",name="kept",namespace="ns",uid="u2"} 1`,
		`kuberay_cluster_provisioned_duration_seconds{name="kept",namespace="ns",uid="u2"} 12`,
	}, all...)
}
