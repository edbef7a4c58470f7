package nodeset

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestSlurmPodConditions(t *testing.T) {
	types := func(cs []corev1.PodCondition) []string {
		var out []string
		for _, c := range cs {
			out = append(out, string(c.Type))
		}
		return out
	}
	tests := []struct {
		states []slurm.NodeState
		want   []string
	}{
		{[]slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDynamicNorm}, []string{"SlurmNodeStateIdle"}},
		{[]slurm.NodeState{slurm.NodeStateMixed, slurm.NodeStateDrain}, []string{"SlurmNodeStateMixed", "SlurmNodeStateDrain"}},
		{[]slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateNotResponding, slurm.NodeStateInvalidReg},
			[]string{"SlurmNodeStateDown", "SlurmNodeStateInvalidReg", "SlurmNodeStateNotResponding"}},
		{[]slurm.NodeState{slurm.NodeStateAllocated, slurm.NodeStateCompleting}, []string{"SlurmNodeStateAllocated", "SlurmNodeStateCompleting"}},
	}
	for _, tt := range tests {
		got := slurmPodConditions(slurm.Node{State: tt.states, Reason: "why"})
		if g := types(got); !slices.Equal(g, tt.want) {
			t.Errorf("%v: conditions %v, want %v", tt.states, g, tt.want)
		}
		for _, c := range got {
			if c.Status != corev1.ConditionTrue || c.Message != "why" {
				t.Errorf("%v: condition %+v, want True with the node's reason", tt.states, c)
			}
		}
	}
}

func TestWithSlurmConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	idle := corev1.PodCondition{Type: "SlurmNodeStateIdle", Status: corev1.ConditionTrue, LastTransitionTime: t0}
	drain := corev1.PodCondition{Type: "SlurmNodeStateDrain", Status: corev1.ConditionTrue, Message: "slurm-operator: why", LastTransitionTime: t0}

	if _, changed := withSlurmConditions([]corev1.PodCondition{ready, idle}, []corev1.PodCondition{{Type: idle.Type, Status: corev1.ConditionTrue}}, t1); changed {
		t.Error("an unchanged condition is a change")
	}
	out, changed := withSlurmConditions([]corev1.PodCondition{ready, idle}, slurmPodConditions(slurm.Node{
		State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: "slurm-operator: why"}), t1)
	if !changed || len(out) != 3 || out[0].Type != corev1.PodReady {
		t.Fatalf("drain added: changed=%v %v", changed, out)
	}
	if out[1].LastTransitionTime != t0 || out[2].LastTransitionTime != t1 {
		t.Errorf("a condition whose status stays keeps its time (message changes too): %v", out)
	}
	out, changed = withSlurmConditions([]corev1.PodCondition{ready, idle, drain}, []corev1.PodCondition{{Type: idle.Type, Status: corev1.ConditionTrue}}, t1)
	if !changed || len(out) != 2 {
		t.Errorf("drain lifted: changed=%v %v", changed, out)
	}
	out, changed = withSlurmConditions([]corev1.PodCondition{ready, idle}, nil, t1)
	if !changed || len(out) != 1 || out[0].Type != corev1.PodReady {
		t.Errorf("node gone: changed=%v %v; want only the kubelet's conditions", changed, out)
	}
}

// TestSlurmPodStateKeepsKubeletConditions: the Slurm conditions are written
// from the reconcile's (possibly stale) copy of the pod; the kubelet's own
// conditions, changed since, must survive the write.
func TestSlurmPodStateKeepsKubeletConditions(t *testing.T) {
	live := makePod("ns-0").ready(t0).obj()
	live.Labels = map[string]string{"app": "slurmd"}
	stale := live.DeepCopy()
	stale.Status.Conditions = nil // read before the kubelet set Ready
	scheme := testScheme(t)
	c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(live).WithStatusSubresource(live).Build()
	r := newReconciler(c, c, nil, nil)
	r.clock = clocktesting.NewFakePassiveClock(t0)
	n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
	s := newTestScope(n, loadSlurmView(context.Background(), fake.New(slurmNode("ns-0", "", slurm.NodeStateIdle)), t0), stale)
	if err := r.syncSlurmPodState(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), got); err != nil {
		t.Fatal(err)
	}
	var types []corev1.PodConditionType
	for _, cond := range got.Status.Conditions {
		types = append(types, cond.Type)
	}
	if !slices.Contains(types, corev1.PodReady) || !slices.Contains(types, "SlurmNodeStateIdle") {
		t.Errorf("conditions %v: want the kubelet's Ready kept and SlurmNodeStateIdle added", types)
	}
}
