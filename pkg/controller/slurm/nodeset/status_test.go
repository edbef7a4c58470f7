package nodeset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// TestReplicaCountsAsSlinkys: the status counts pods as Slinky's
// calculateReplicaStatus does (v1.2.1, nodeset_sync_status.go), which is
// how a StatefulSet counts them: status.replicas (what an HPA reads through
// the scale subresource) and readyReplicas include pods still terminating,
// updatedReplicas does not, and unavailableReplicas is the pods there less
// the available ones.
func TestReplicaCountsAsSlinkys(t *testing.T) {
	pods := []*corev1.Pod{
		makePod("ns-0").ready(t0).hash("new").obj(),
		makePod("ns-1").ready(t0).hash("new").terminating().obj(),
		makePod("ns-2").hash("old").terminating().obj(),
		makePod("ns-3").phase(corev1.PodPending).hash("new").obj(),
	}
	var ws []*worker
	for _, p := range pods {
		ws = append(ws, newWorker(p))
	}
	n := &slinkyv1beta1.NodeSet{}
	n.Spec.Replicas = ptr.To[int32](6)
	rev := revisionState{update: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{
		Labels: map[string]string{slinkyv1beta1.LabelNodeSetRevisionHash: "new"}}}}
	st := computeStatus(n, ws, &slurmView{}, rev, nil, t0)
	got := [5]int32{st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas, st.UnavailableReplicas}
	// replicas, ready, available, updated, unavailable
	if want := [5]int32{4, 2, 2, 2, 2}; got != want {
		t.Errorf("replicas, ready, available, updated, unavailable = %v, want %v", got, want)
	}
	if st.Desired != 6 {
		t.Errorf("desired = %d, want 6", st.Desired)
	}
}
