package rayservice

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// series renders reg's kuberay_service_* series as sorted lines.
func series(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", f.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue()))
		}
	}
	slices.Sort(out)
	return out
}

// The series are KubeRay's (ray_service_metrics.go, v1.7.0): one info
// series, and one series each for Ready and UpgradeInProgress whose
// condition label says true or false; a change replaces the series and a
// deleted RayService leaves none.
func TestServiceMetricsAreKubeRays(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewServiceMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "fruit", Namespace: "ns", UID: "u1"}}
	m.Set(svc)
	want := []string{
		`kuberay_service_condition_ready{condition="false",name="fruit",namespace="ns",uid="u1"} 1`,
		`kuberay_service_condition_upgrade_in_progress{condition="false",name="fruit",namespace="ns",uid="u1"} 1`,
		`kuberay_service_info{name="fruit",namespace="ns",uid="u1"} 1`,
	}
	if got := series(t, reg); !slices.Equal(got, want) {
		t.Fatalf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	svc.Status.Conditions = []metav1.Condition{
		{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "NonZeroServeEndpoints"},
		{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionFalse, Reason: "NoPendingCluster"},
	}
	m.Set(svc)
	want = []string{
		`kuberay_service_condition_ready{condition="true",name="fruit",namespace="ns",uid="u1"} 1`,
		`kuberay_service_condition_upgrade_in_progress{condition="false",name="fruit",namespace="ns",uid="u1"} 1`,
		`kuberay_service_info{name="fruit",namespace="ns",uid="u1"} 1`,
	}
	if got := series(t, reg); !slices.Equal(got, want) {
		t.Fatalf("after Ready:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	m.Forget("ns", "fruit")
	if got := series(t, reg); len(got) != 0 {
		t.Fatalf("after Forget: %v", got)
	}
}
