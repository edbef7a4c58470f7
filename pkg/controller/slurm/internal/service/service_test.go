package service

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

func TestService(t *testing.T) {
	user := slinkyv1beta1.ServiceSpec{Metadata: slinkyv1beta1.Metadata{Labels: map[string]string{"team": "hpc", builder.LabelManagedBy: "me"}}}
	user.Spec.Type = corev1.ServiceTypeLoadBalancer
	user.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	user.Spec.Ports = []corev1.ServicePort{{Name: "metrics", Port: 9000}}
	user.Spec.Selector = map[string]string{builder.LabelName: "wrong"}
	user.NodePort = 30000
	p := Params{
		Meta: builder.NewMetadata("svc", "ns").Build(), User: user,
		Selector: map[string]string{builder.LabelName: "slurmctld"}, PortName: "slurmctld", Port: 6817,
	}
	svc := New(p)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.LoadBalancerSourceRanges) != 1 {
		t.Errorf("user settings lost: %+v", svc.Spec)
	}
	if svc.Spec.Selector[builder.LabelName] != "slurmctld" || svc.Labels[builder.LabelManagedBy] != builder.ManagedByGantry || svc.Labels["team"] != "hpc" {
		t.Errorf("operator labels must win: selector=%v labels=%v", svc.Spec.Selector, svc.Labels)
	}
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].NodePort != 30000 || svc.Spec.Ports[1].Name != "metrics" {
		t.Errorf("ports = %+v", svc.Spec.Ports)
	}
	headless := NewHeadless(p)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || headless.Spec.Type != corev1.ServiceTypeClusterIP || len(headless.Spec.Ports) != 1 {
		t.Errorf("headless = %+v", headless.Spec)
	}
	if user.Spec.Selector[builder.LabelName] != "wrong" {
		t.Error("New modified the user's spec")
	}
}

// TestServiceDropsExternalIPs: as Slinky v1.2.1 (common/service.go,
// against CVE-2020-8554: a Service's externalIPs can capture traffic meant
// for those addresses), the Services Gantry builds carry no externalIPs;
// admission warns when a CR sets them.
func TestServiceDropsExternalIPs(t *testing.T) {
	user := slinkyv1beta1.ServiceSpec{}
	user.Spec.ExternalIPs = []string{"10.0.0.1"}
	svc := New(Params{Meta: builder.NewMetadata("svc", "ns").Build(), User: user,
		Selector: map[string]string{builder.LabelName: "slurmrestd"}, PortName: "slurmrestd", Port: 6820})
	if len(svc.Spec.ExternalIPs) != 0 {
		t.Errorf("externalIPs = %v, want none", svc.Spec.ExternalIPs)
	}
	if len(user.Spec.ExternalIPs) != 1 {
		t.Error("New modified the user's spec")
	}
}
