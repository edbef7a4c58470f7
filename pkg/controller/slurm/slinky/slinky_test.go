package slinky

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

func TestNames(t *testing.T) {
	c := &slinkyv1beta1.Controller{ObjectMeta: metav1.ObjectMeta{Name: "slurm", Namespace: "slinky"}}
	ext := c.DeepCopy()
	ext.Spec.External, ext.Spec.ExternalConfig = true, &slinkyv1beta1.ExternalConfig{Host: "ctld", Port: 7000}
	named := &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu-set"}}
	named.Spec.Template.Spec.Hostname = "gpu-"
	dashes := &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}}
	dashes.Spec.Template.Spec.Hostname = " -"
	tests := []struct {
		name, got, want string
	}{
		{"statefulset", ControllerStatefulSetName("slurm"), "slurm-controller"},
		{"service", ControllerServiceName("slurm"), "slurm-controller"},
		{"internal service", ControllerInternalServiceName("slurm"), "slurm-controller-internal"},
		{"configmap", ControllerConfigMapName("slurm"), "slurm-config"},
		{"pod", ControllerPodName("slurm", 0), "slurm-controller-0"},
		{"pod fqdn", ControllerPodFQDNShort("slurm", "slinky", 0), "slurm-controller-0.slurm-controller-internal.slinky"},
		{"service fqdn", ControllerServiceFQDNShort("slurm", "slinky"), "slurm-controller.slinky"},
		{"restapi", RestApiName("slurm"), "slurm-restapi"},
		{"nodeset name", SlurmNodeSetName(&slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}}), "cpu"},
		{"nodeset hostname prefix", SlurmNodeSetName(named), "gpu"},
		{"nodeset hostname of dashes", SlurmNodeSetName(dashes), "cpu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	if diff := cmp.Diff([]string{"--conf-server", "slurm-controller-0.slurm-controller-internal.slinky:6817"}, ConfServerArgs(c)); diff != "" {
		t.Errorf("ConfServerArgs: %s", diff)
	}
	if diff := cmp.Diff([]string{"--conf-server", "ctld:7000"}, ConfServerArgs(ext)); diff != "" {
		t.Errorf("ConfServerArgs external: %s", diff)
	}
}

func TestLabels(t *testing.T) {
	c := &slinkyv1beta1.Controller{ObjectMeta: metav1.ObjectMeta{Name: "slurm"}}
	n := &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: slinkyv1beta1.NodeSetSpec{ControllerRef: slinkyv1beta1.ObjectReference{Name: "slurm"}}}
	tests := []struct {
		name      string
		got, want map[string]string
	}{
		{"controller selector", ControllerSelectorLabels(c), map[string]string{builder.LabelName: "slurmctld", builder.LabelInstance: "slurm"}},
		{"controller", ControllerLabels(c), map[string]string{builder.LabelName: "slurmctld", builder.LabelInstance: "slurm",
			builder.LabelComponent: "controller", builder.LabelManagedBy: "gantry"}},
		{"restapi", RestApiLabels(&slinkyv1beta1.RestApi{ObjectMeta: metav1.ObjectMeta{Name: "r"}}), map[string]string{
			builder.LabelName: "slurmrestd", builder.LabelInstance: "r", builder.LabelComponent: "restapi", builder.LabelManagedBy: "gantry"}},
		{"nodeset", NodeSetLabels(n), map[string]string{builder.LabelName: "slurmd", builder.LabelInstance: "gpu",
			builder.LabelComponent: "worker", builder.LabelManagedBy: "gantry", "slinky.slurm.net/cluster": "slurm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHashStrings(t *testing.T) {
	a := HashStrings(map[string]string{"a": "bc", "x": "1"})
	tests := []struct {
		name string
		in   map[string]string
		same bool
	}{
		{"same content", map[string]string{"x": "1", "a": "bc"}, true},
		{"key/value boundary moved", map[string]string{"ab": "c", "x": "1"}, false},
		{"value changed", map[string]string{"a": "bd", "x": "1"}, false},
		{"key removed", map[string]string{"a": "bc"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := HashStrings(tc.in) == a; got != tc.same {
				t.Errorf("equal = %v, want %v", got, tc.same)
			}
		})
	}
	if HashBytes([]byte("k1")) == HashBytes([]byte("k2")) {
		t.Error("different keys hash alike")
	}
}
