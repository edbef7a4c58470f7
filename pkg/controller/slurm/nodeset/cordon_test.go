package nodeset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestCordonReason: the drain reason of a cordoned Kubernetes Node's pods
// is the Node's node-cordon-reason annotation, else (with
// --propagated-node-conditions) the listed conditions that are True, in
// the flag's order, else Gantry's default, as Slinky v1.2 writes them.
func TestCordonReason(t *testing.T) {
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
		{Type: "KernelDeadlock", Status: corev1.ConditionTrue, Reason: "DockerHung", Message: "task docker:7 blocked\\nfor more than 300 seconds"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "ok"},
	}
	tests := []struct {
		name       string
		propagated []string
		annotation string
		want       string
	}{
		{name: "no conditions propagated", want: "slurm-operator: Node (kn-0) was cordoned, Pod (ns/ns-0) must be cordoned"},
		{name: "the listed conditions that are True, in the flag's order",
			propagated: []string{"DiskPressure", "MemoryPressure", "KernelDeadlock"},
			want:       "slurm-operator: (KubeletHasDiskPressure: kubelet has disk pressure); (DockerHung: task docker:7 blocked\\nfor more than 300 seconds)"},
		{name: "none of the listed conditions is True", propagated: []string{"MemoryPressure"},
			want: "slurm-operator: Node (kn-0) was cordoned, Pod (ns/ns-0) must be cordoned"},
		{name: "the Node's annotation wins", propagated: []string{"DiskPressure"}, annotation: "rack 4 power work",
			want: "slurm-operator: rack 4 power work"},
	}
	scheme := testScheme(t)
	ctx := context.Background()
	n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kn-0"}, Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{Conditions: conditions}}
			if tt.annotation != "" {
				node.Annotations = map[string]string{slinkyv1beta1.AnnotationNodeCordonReason: tt.annotation}
			}
			pod := makePod("ns-0").ready(t0).obj()
			pod.Spec.NodeName = node.Name
			c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(node, pod.DeepCopy()).Build()
			r := newReconciler(c, c, nil, nil)
			r.propagatedNodeConditions = tt.propagated
			slurmd := fake.New(slurmNode("ns-0", "", slurm.NodeStateIdle))
			s := newTestScope(n, loadSlurmView(ctx, slurmd, t0), pod)
			if err := r.syncCordon(ctx, s); err != nil {
				t.Fatal(err)
			}
			got, _ := slurmd.Node("ns-0")
			if !got.IsDrain() || got.Reason != tt.want {
				t.Errorf("node %v, reason %q; want drained with %q", got.State, got.Reason, tt.want)
			}
		})
	}
}

func TestSlinkysCordon(t *testing.T) {
	pod := makePod("ns-3").annotate(slinkyv1beta1.AnnotationPodCordon, "true").obj()
	drained := func(reason string) slurm.Node {
		return slurm.Node{Name: "ns-3", State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: reason}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		node slurm.Node
		want string
	}{
		{"Slinky's Node cordon", pod, drained("slurm-operator: Node (node-ns-3) was cordoned, Pod (ns/ns-3) must be cordoned"), cordonedForNode},
		{"Slinky's scale-in", pod, drained("slurm-operator: Pod (ns/ns-3) is pending termination for scale-in"), cordonedForScaleIn},
		{"a person's cordon", pod, drained("slurm-operator: Pod (ns/ns-3) was cordoned"), ""},
		{"another Node's text", pod, drained("slurm-operator: Node (elsewhere) was cordoned, Pod (ns/ns-3) must be cordoned"), ""},
		{"another pod's text", pod, drained("slurm-operator: Pod (ns/ns-4) is pending termination for scale-in"), ""},
		{"the Node annotation's reason", pod, drained("slurm-operator: kernel upgrade"), ""},
		{"not drained", pod, slurm.Node{Name: "ns-3", Reason: "slurm-operator: Pod (ns/ns-3) is pending termination for scale-in"}, ""},
		{"pod not cordoned", makePod("ns-3").obj(), drained("slurm-operator: Pod (ns/ns-3) is pending termination for scale-in"), ""},
		{"Gantry's own cordon", makePod("ns-3").annotate(slinkyv1beta1.AnnotationPodCordon, "true").annotate(AnnotationCordonedBy, cordonedForUpdate).obj(),
			drained("slurm-operator: Pod (ns/ns-3) is pending termination for scale-in"), ""},
	}
	for _, tt := range tests {
		if got := slinkysCordon(tt.pod, tt.node); got != tt.want {
			t.Errorf("%s: slinkysCordon = %q, want %q", tt.name, got, tt.want)
		}
	}
}
