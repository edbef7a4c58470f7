package nodeset

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestSyncSlurmNodeRecords(t *testing.T) {
	ds := slinkytesting.MakeNodeSet("ds", "ns", "slurm").DaemonSet().PruneNodeNotFound().Obj()
	ds.UID = types.UID("uid-ds")
	comment := func(pod, node string, uid types.UID) string {
		b, _ := json.Marshal(podInfo{Namespace: "ns", PodName: pod, Node: node, NodeSetName: "ds", NodeSetUID: string(uid)})
		return string(b)
	}
	defunct := func(name, pod, node string) slurm.Node {
		return slurm.Node{Name: name, State: []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateNotResponding},
			Comment: comment(pod, node, ds.UID)}
	}
	existingPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ds-alive", Namespace: "ns"}}
	mapsHere := slinkytesting.MakeNode("dn-here").Obj()
	renamed := slinkytesting.MakeNode("dn-renamed").Obj()
	renamed.Annotations = map[string]string{slinkyv1beta1.AnnotationNodeHostnameOverride: "big-1"}
	running := slurm.Job{JobID: 9, Nodes: "dn-busy", State: []slurm.JobState{slurm.JobStateRunning}}

	tests := []struct {
		name      string
		nodeSet   *slinkyv1beta1.NodeSet
		node      slurm.Node
		jobs      []slurm.Job
		listErr   error
		wantPrune bool
	}{
		{name: "pod and Kubernetes node gone", node: defunct("dn-gone", "ds-x", "dn-gone"), wantPrune: true},
		{name: "Kubernetes node now gives its pod another name", node: defunct("dn-renamed", "ds-x", "dn-renamed"), wantPrune: true},
		{name: "the pod still exists", node: defunct("dn-gone", "ds-alive", "dn-gone")},
		{name: "the Kubernetes node still maps to it", node: defunct("dn-here", "ds-x", "dn-here")},
		{name: "the comment names no Kubernetes node", node: defunct("dn-gone", "ds-x", "")},
		{name: "a job runs there", node: defunct("dn-busy", "ds-x", "dn-busy"), jobs: []slurm.Job{running}},
		{name: "a pending job asks for it by name", node: defunct("dn-gone", "ds-x", "dn-gone"),
			jobs: []slurm.Job{{JobID: 10, State: []slurm.JobState{slurm.JobStatePending}, RequiredNodes: "dn-gone"}}},
		{name: "allocated", node: func() slurm.Node {
			n := defunct("dn-gone", "ds-x", "dn-gone")
			n.AllocCPUs = 2
			return n
		}()},
		{name: "down but responding", node: slurm.Node{Name: "dn-gone", State: []slurm.NodeState{slurm.NodeStateDown},
			Comment: comment("ds-x", "dn-gone", ds.UID)}},
		{name: "a NodeSet of the same name before", node: slurm.Node{Name: "dn-gone",
			State: []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateNotResponding}, Comment: comment("ds-x", "dn-gone", "uid-old")}},
		{name: "a comment that is not Gantry's", node: slurm.Node{Name: "dn-gone",
			State: []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateNotResponding}, Comment: "rack 4"}},
		{name: "Slurm cannot be read", node: defunct("dn-gone", "ds-x", "dn-gone"), listErr: errors.New("slurmrestd down")},
		{name: "on the host network the node's own name still maps", nodeSet: func() *slinkyv1beta1.NodeSet {
			n := ds.DeepCopy()
			n.Spec.Template.Spec.HostNetwork = true
			return n
		}(), node: defunct("dn-renamed", "ds-x", "dn-renamed")},
		{name: "StatefulSet mode", nodeSet: func() *slinkyv1beta1.NodeSet {
			n := ds.DeepCopy()
			n.Spec.ScalingMode = slinkyv1beta1.ScalingModeStatefulset
			return n
		}(), node: defunct("dn-gone", "ds-x", "dn-gone")},
		{name: "pruneSlurmNodeRecords Never", nodeSet: func() *slinkyv1beta1.NodeSet {
			n := ds.DeepCopy()
			n.Spec.PruneSlurmNodeRecords = slinkyv1beta1.NodeSetPruneNodeRecordTypeNever
			return n
		}(), node: defunct("dn-gone", "ds-x", "dn-gone")},
	}
	scheme := testScheme(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := ds
			if tt.nodeSet != nil {
				n = tt.nodeSet
			}
			c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(existingPod, mapsHere, renamed).Build()
			r := newReconciler(c, c, nil, nil)
			slurmd := fake.New(tt.node)
			slurmd.SetJobs(tt.jobs...)
			slurmd.SetError(fake.OpListNodes, tt.listErr)
			s := newTestScope(n, loadSlurmView(context.Background(), slurmd, time.Now()))
			if err := r.syncSlurmNodeRecords(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			_, listed := slurmd.Node(tt.node.Name)
			if pruned := slices.Contains(slurmd.Deleted(), tt.node.Name); pruned != tt.wantPrune || listed == tt.wantPrune {
				t.Errorf("pruned = %v (still listed %v), want pruned %v", pruned, listed, tt.wantPrune)
			}
			if !tt.wantPrune && slurmd.Calls(fake.OpDeleteNode) != 0 {
				t.Errorf("DeleteNode called %d times", slurmd.Calls(fake.OpDeleteNode))
			}
		})
	}
}

// TestSyncSlurmNodeRecordsFailsClosed: a pod that cannot be read keeps its
// record, and the error is reported.
func TestSyncSlurmNodeRecordsFailsClosed(t *testing.T) {
	ds := slinkytesting.MakeNodeSet("ds", "ns", "slurm").DaemonSet().PruneNodeNotFound().Obj()
	ds.UID = "uid-ds"
	info, _ := json.Marshal(podInfo{Namespace: "ns", PodName: "ds-x", Node: "dn-gone", NodeSetName: "ds", NodeSetUID: "uid-ds"})
	slurmd := fake.New(slurm.Node{Name: "dn-gone", State: []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateNotResponding}, Comment: string(info)})
	scheme := testScheme(t)
	base := ctrlfake.NewClientBuilder().WithScheme(scheme).Build()
	broken := failingGets{Client: base}
	r := newReconciler(base, broken, nil, nil)
	s := newTestScope(ds, loadSlurmView(context.Background(), slurmd, time.Now()))
	if err := r.syncSlurmNodeRecords(context.Background(), s); err == nil {
		t.Error("no error although the pod could not be read")
	}
	if slurmd.Calls(fake.OpDeleteNode) != 0 {
		t.Error("a record was deleted although its pod could not be read")
	}
}

type failingGets struct{ client.Client }

func (failingGets) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("api server unavailable")
}

// TestScaledInRecords: in StatefulSet mode slurmd's preStop keeps its
// record (the pod that replaces it registers onto it), so Gantry deletes
// the records of ordinals a scale-in removed, and only those whose
// deletion ends no job and undoes no administrator's decision.
func TestScaledInRecords(t *testing.T) {
	n := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj()
	n.UID = "uid-cpu"
	n.Spec.Replicas = ptr.To[int32](2)
	comment := func(pod string) string {
		b, _ := json.Marshal(podInfo{Namespace: "ns", PodName: pod, Node: "kn", NodeSetName: "cpu", NodeSetUID: string(n.UID)})
		return string(b)
	}
	record := func(name, reason string, states ...slurm.NodeState) slurm.Node {
		return slurm.Node{Name: name, State: states, Reason: reason, Comment: comment(name)}
	}
	down := []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateDrain}
	terminating := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu-6", Namespace: "ns"}}
	tests := []struct {
		name      string
		node      slurm.Node
		jobs      []slurm.Job
		listErr   error
		wantPrune bool
		// onePodShort: the NodeSet runs fewer pods than it wants.
		onePodShort bool
	}{
		{name: "left by the preStop of a scaled-in pod", node: record("cpu-3", PreStopReason, down...), wantPrune: true},
		{name: "slurmd stopped answering (no preStop ran)", node: record("cpu-5", "Not responding", slurm.NodeStateDown, slurm.NodeStateNotResponding), wantPrune: true},
		{name: "an ordinal the NodeSet still runs", node: record("cpu-1", PreStopReason, down...)},
		{name: "an ordinal below the replicas a scale-in removed", node: record("cpu-0", PreStopReason, down...), wantPrune: true},
		{name: "a pod is about to be made", node: record("cpu-3", PreStopReason, down...), onePodShort: true},
		{name: "a pending job asks for it by name", node: record("cpu-10", PreStopReason, down...),
			jobs: []slurm.Job{{JobID: 3, State: []slurm.JobState{slurm.JobStatePending}, RequiredNodes: "cpu-[9-10]"}}},
		{name: "a suspended job holds it", node: record("cpu-7", PreStopReason, down...),
			jobs: []slurm.Job{{JobID: 4, State: []slurm.JobState{slurm.JobStateSuspended}, Nodes: "cpu-7"}}},
		{name: "an administrator's drain", node: record("cpu-4", "admin: bad DIMM", slurm.NodeStateIdle, slurm.NodeStateDrain)},
		{name: "its pod still exists", node: record("cpu-6", PreStopReason, down...)},
		{name: "in service", node: record("cpu-8", "", slurm.NodeStateIdle)},
		// Its pod went before it was scheduled, so no comment names it.
		{name: "no comment, the NodeSet's feature and an ordinal's name", node: slurm.Node{Name: "cpu-9", State: down,
			Reason: PreStopReason, Features: []string{"cpu"}}, wantPrune: true},
		{name: "no comment and another feature", node: slurm.Node{Name: "cpu-9", State: down, Reason: PreStopReason, Features: []string{"gpu"}}},
		{name: "no comment and a name no ordinal has", node: slurm.Node{Name: "cpu-9x", State: down, Reason: PreStopReason, Features: []string{"cpu"}}},
		{name: "Slurm cannot be read", node: record("cpu-3", PreStopReason, down...), listErr: errors.New("slurmrestd down")},
	}
	scheme := testScheme(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(terminating).Build()
			r := newReconciler(c, c, nil, nil)
			slurmd := fake.New(tt.node)
			slurmd.SetJobs(tt.jobs...)
			slurmd.SetError(fake.OpListNodes, tt.listErr)
			// Two live pods, as many as wanted, at ordinals 1 and 2 (a
			// scale-in took ordinal 0); one more is going.
			pods := []*corev1.Pod{makePod("cpu-1").obj(), makePod("cpu-2").obj(), makePod("cpu-6").terminating().obj()}
			if tt.onePodShort {
				pods = pods[1:]
			}
			s := newTestScope(n, loadSlurmView(context.Background(), slurmd, time.Now()), pods...)
			if err := r.syncSlurmNodeRecords(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if pruned := slices.Contains(slurmd.Deleted(), tt.node.Name); pruned != tt.wantPrune {
				t.Errorf("pruned = %v, want %v", pruned, tt.wantPrune)
			}
		})
	}
}

// TestRetiredRecords: in DaemonSet mode Gantry deletes the records of pods
// whose Kubernetes node no longer runs the NodeSet under that Slurm node
// name, whatever pruneSlurmNodeRecords says, and only where deleting ends
// no job and undoes no administrator's decision.
func TestRetiredRecords(t *testing.T) {
	ds := slinkytesting.MakeNodeSet("ds", "ns", "slurm").DaemonSet().Obj()
	ds.UID = "uid-ds"
	record := func(name, reason string, states ...slurm.NodeState) slurm.Node {
		b, _ := json.Marshal(podInfo{Namespace: "ns", PodName: "ds-" + name, Node: name, NodeSetName: "ds", NodeSetUID: string(ds.UID)})
		return slurm.Node{Name: name, State: states, Reason: reason, Comment: string(b)}
	}
	down := []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateDrain}
	plan := &daemonPlan{serves: map[string]string{"dn-a": "dn-a", "dn-b": "big-1"}}
	alive := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ds-dn-alive", Namespace: "ns"}}
	tests := []struct {
		name      string
		node      slurm.Node
		jobs      []slurm.Job
		wantPrune bool
	}{
		{name: "its Kubernetes node no longer runs the NodeSet", node: record("dn-old", PreStopReason, down...), wantPrune: true},
		{name: "its Kubernetes node gives its pod another name now", node: record("dn-b", PreStopReason, down...), wantPrune: true},
		{name: "its Kubernetes node still runs the NodeSet under that name", node: record("dn-a", PreStopReason, down...)},
		{name: "an administrator's drain", node: record("dn-old", "admin: rack move", slurm.NodeStateIdle, slurm.NodeStateDrain)},
		{name: "a pending job asks for it by name", node: record("dn-old", PreStopReason, down...),
			jobs: []slurm.Job{{JobID: 1, State: []slurm.JobState{slurm.JobStatePending}, RequiredNodes: "dn-old"}}},
		{name: "its pod still exists", node: record("dn-alive", PreStopReason, down...)},
	}
	scheme := testScheme(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(alive).Build()
			r := newReconciler(c, c, nil, nil)
			slurmd := fake.New(tt.node)
			slurmd.SetJobs(tt.jobs...)
			s := newTestScope(ds, loadSlurmView(context.Background(), slurmd, time.Now()))
			s.daemon = plan
			if err := r.syncSlurmNodeRecords(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if pruned := slices.Contains(slurmd.Deleted(), tt.node.Name); pruned != tt.wantPrune {
				t.Errorf("pruned = %v, want %v", pruned, tt.wantPrune)
			}
		})
	}
}
