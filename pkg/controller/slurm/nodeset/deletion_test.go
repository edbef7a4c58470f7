package nodeset

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// job is a job of the given states on nodes.
func job(id int64, nodes string, states ...slurm.JobState) slurm.Job {
	return slurm.Job{JobID: id, Nodes: nodes, State: states}
}

// newTestScope is a reconcile's scope of n as Load leaves it: Slurm's
// view, and pods claimed as workers.
func newTestScope(n *slinkyv1beta1.NodeSet, view *slurmView, pods ...*corev1.Pod) *scope {
	s := &scope{Base: syncsteps.Base[*slinkyv1beta1.NodeSet]{Object: n}, slurm: view}
	s.setPods(pods)
	return s
}

// TestMayRunJobs is the table of the one decision every deleting path
// asks: may deleting this pod now end a Slurm job? Every pod phase that
// matters, against every kind of Slurm answer: none (no RestApi), none
// this time (unreachable), the node's own state, and the jobs that hold
// the node whatever its state says.
func TestMayRunJobs(t *testing.T) {
	pods := map[string]*corev1.Pod{
		"Running+Ready":       makePod("ns-0").ready(t0).obj(),
		"Running, not Ready":  makePod("ns-0").obj(),
		"Pending, scheduled":  makePod("ns-0").phase(corev1.PodPending).obj(),
		"Pending, unassigned": makePod("ns-0").unscheduled().phase(corev1.PodPending).obj(),
		"Unknown":             makePod("ns-0").phase(corev1.PodUnknown).obj(),
		"Failed":              makePod("ns-0").phase(corev1.PodFailed).obj(),
		"Succeeded":           makePod("ns-0").phase(corev1.PodSucceeded).obj(),
	}
	idle := slurmNode("ns-0", "", slurm.NodeStateIdle)
	drained := slurmNode("ns-0", "slurm-operator: x", slurm.NodeStateIdle, slurm.NodeStateDrain)
	downDrained := slurmNode("ns-0", "slurm-operator: Pod is terminating", slurm.NodeStateDown, slurm.NodeStateDrain)
	draining := slurmNode("ns-0", "x", slurm.NodeStateMixed, slurm.NodeStateDrain)
	completing := slurmNode("ns-0", "x", slurm.NodeStateIdle, slurm.NodeStateDrain, slurm.NodeStateCompleting)
	allocCPUs := drained
	allocCPUs.AllocCPUs = 1

	type slurmState struct {
		name  string
		nodes []slurm.Node
		jobs  []slurm.Job
		// unreachable: slurmrestd answers with an error.
		unreachable bool
		// none: the Controller has no RestApi (upstream's rule).
		none bool
	}
	states := []slurmState{
		{name: "no RestApi", none: true},
		{name: "unreachable", nodes: []slurm.Node{idle}, unreachable: true},
		{name: "not listed"},
		{name: "idle", nodes: []slurm.Node{idle}},
		{name: "drained, no job", nodes: []slurm.Node{drained}},
		{name: "down+drained by a preStop", nodes: []slurm.Node{downDrained}},
		{name: "draining with a job", nodes: []slurm.Node{draining}, jobs: []slurm.Job{job(1, "ns-0", slurm.JobStateRunning)}},
		{name: "drained, epilog running", nodes: []slurm.Node{completing}},
		{name: "drained, CPUs allocated", nodes: []slurm.Node{allocCPUs}},
		// scontrol suspend frees the job's CPUs: the node reads IDLE.
		{name: "drained, a suspended job", nodes: []slurm.Node{drained}, jobs: []slurm.Job{job(2, "ns-[0-1]", slurm.JobStateSuspended)}},
		{name: "drained, a job completing", nodes: []slurm.Node{drained}, jobs: []slurm.Job{job(3, "ns-0", slurm.JobStateCompleted, slurm.JobStateCompleting)}},
		{name: "drained, a job booting its nodes", nodes: []slurm.Node{drained}, jobs: []slurm.Job{job(4, "ns-0", slurm.JobStateRunning, slurm.JobStateConfiguring)}},
		{name: "drained, a stopped job", nodes: []slurm.Node{drained}, jobs: []slurm.Job{job(5, "ns-0", slurm.JobStateStopped)}},
		{name: "drained, finished jobs only", nodes: []slurm.Node{drained}, jobs: []slurm.Job{job(6, "ns-0", slurm.JobStateCompleted), job(7, "ns-0", slurm.JobStateCancelled)}},
		{name: "drained, a pending job that asks for it", nodes: []slurm.Node{drained},
			jobs: []slurm.Job{{JobID: 8, State: []slurm.JobState{slurm.JobStatePending}, RequiredNodes: "ns-0"}}},
		{name: "drained, a suspended job elsewhere", nodes: []slurm.Node{drained}, jobs: []slurm.Job{job(9, "ns-1", slurm.JobStateSuspended)}},
	}
	// may lists, per Slurm state, the pods whose deletion may end a job;
	// every other pod of the table may go.
	all := []string{"Running+Ready", "Running, not Ready", "Pending, scheduled", "Pending, unassigned", "Unknown"}
	scheduled := []string{"Running+Ready", "Running, not Ready", "Pending, scheduled", "Unknown"}
	may := map[string][]string{
		"no RestApi": nil,
		// Nothing is known: every pod that may have started slurmd.
		"unreachable": scheduled,
		// A Ready slurmd whose node Slurm does not list may have registered
		// under another name; the others never registered.
		"not listed": {"Running+Ready"},
		// A node Slurm lists decides, whatever the kubelet reports: slurmd
		// registers (and takes jobs) before the pod shows Running.
		"idle":                                    all,
		"drained, no job":                         nil,
		"down+drained by a preStop":               nil,
		"draining with a job":                     all,
		"drained, epilog running":                 all,
		"drained, CPUs allocated":                 all,
		"drained, a suspended job":                all,
		"drained, a job completing":               all,
		"drained, a job booting its nodes":        all,
		"drained, a stopped job":                  all,
		"drained, finished jobs only":             nil,
		"drained, a pending job that asks for it": nil,
		"drained, a suspended job elsewhere":      nil,
	}
	for _, st := range states {
		for podName, pod := range pods {
			t.Run(fmt.Sprintf("%s/%s", st.name, podName), func(t *testing.T) {
				var c slurm.Client
				if !st.none {
					f := fake.New(st.nodes...)
					f.SetJobs(st.jobs...)
					if st.unreachable {
						f.SetError(fake.OpListNodes, errors.New("connection refused"))
					}
					c = f
				}
				v := loadSlurmView(context.Background(), c, t0)
				want := false
				for _, p := range may[st.name] {
					want = want || p == podName
				}
				if got := v.mayRunJobs(newWorker(pod)); got != want {
					t.Errorf("mayRunJobs = %v, want %v", got, want)
				}
			})
		}
	}
}

// TestDeletesActOnAFreshRead: every delete is preceded by a read of the
// node itself; a node the reconcile's list showed drained (or missing)
// that runs a job (or registered) by then keeps its pod.
func TestDeletesActOnAFreshRead(t *testing.T) {
	scheme := testScheme(t)
	n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		listed []slurm.Node
		// then is the node as it is once the list has been read.
		then slurm.Node
		run  func(r *Reconciler, s *scope, w *worker) error
	}{
		{
			name:   "scale-in of a node listed drained that now runs a job",
			listed: []slurm.Node{slurmNode("ns-0", "slurm-operator: x", slurm.NodeStateIdle, slurm.NodeStateDrain)},
			then:   slurmNode("ns-0", "slurm-operator: x", slurm.NodeStateAllocated, slurm.NodeStateDrain),
			run: func(r *Reconciler, s *scope, w *worker) error {
				return r.condemn(ctx, s, w, cordonedForScaleIn)
			},
		},
		{
			name: "self-healing of a pod whose slurmd registered since the list",
			then: slurmNode("ns-0", "", slurm.NodeStateIdle),
			run: func(r *Reconciler, s *scope, _ *worker) error {
				return r.syncUnregistered(ctx, s)
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := makePod("ns-0").ready(t0).obj()
			c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(pod.DeepCopy()).Build()
			r := newReconciler(c, c, nil, nil)
			slurmd := fake.New(tt.listed...)
			s := newTestScope(n, loadSlurmView(ctx, slurmd, t0), pod)
			slurmd.SetNode(tt.then)
			if err := tt.run(r, s, s.workers.of(pod)); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err != nil {
				t.Errorf("the pod was deleted on a stale read: %v", err)
			}
			if slurmd.Calls(fake.OpGetNode) == 0 {
				t.Error("the node was not read again before deciding")
			}
		})
	}
}

// TestProtection: the PodDisruptionBudget's label goes on every pod whose
// node a job holds, whatever the node's own state says, and on a Ready pod
// whose node Slurm does not list (its jobs may run under another name).
func TestProtection(t *testing.T) {
	scheme := testScheme(t)
	ctx := context.Background()
	n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
	pods := []*corev1.Pod{
		makePod("ns-0").ready(t0).obj(), // allocated
		makePod("ns-1").ready(t0).obj(), // drained, its job suspended
		makePod("ns-2").ready(t0).obj(), // not listed, Ready
		makePod("ns-3").ready(t0).obj(), // idle
		makePod("ns-4").obj(),           // not listed, slurmd not Ready: never registered
	}
	want := map[string]bool{"ns-0": true, "ns-1": true, "ns-2": true}
	slurmd := fake.New(
		slurmNode("ns-0", "", slurm.NodeStateAllocated),
		slurmNode("ns-1", "admin: maintenance", slurm.NodeStateIdle, slurm.NodeStateDrain),
		slurmNode("ns-3", "", slurm.NodeStateIdle),
	)
	slurmd.SetJobs(job(1, "ns-0", slurm.JobStateRunning), job(2, "ns-1", slurm.JobStateSuspended))
	objs := make([]client.Object, 0, len(pods))
	for _, p := range pods {
		p.Labels = map[string]string{}
		objs = append(objs, p.DeepCopy())
	}
	c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	r := newReconciler(c, c, nil, nil)
	s := newTestScope(n, loadSlurmView(ctx, slurmd, t0), pods...)
	if err := r.syncProtection(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		if protected := got.Labels[slinkyv1beta1.LabelNodeSetPodProtect] == "true"; protected != want[p.Name] {
			t.Errorf("%s: protected = %v, want %v", p.Name, protected, want[p.Name])
		}
	}
}

// TestAnotherNameMayRunJobs: a node Slurm lists that could be the pod's
// slurmd under another name keeps the pod, Ready or not.
func TestAnotherNameMayRunJobs(t *testing.T) {
	n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
	for _, tt := range []struct {
		name string
		node slurm.Node
	}{
		{"the pod's name with a domain", slurmNode("ns-0.example.org", "", slurm.NodeStateIdle)},
		{"a node of the NodeSet's feature no pod accounts for", slurm.Node{Name: "gpu-host-7", State: []slurm.NodeState{slurm.NodeStateIdle},
			Features: []string{"ns"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := makePod("ns-0").obj() // Running, slurmd not Ready yet
			v := loadSlurmView(context.Background(), fake.New(tt.node), t0)
			w := newWorker(pod)
			v.knowPods(n, []*worker{w})
			if !v.mayRunJobs(w) {
				t.Error("mayRunJobs = false for a pod whose slurmd may be registered under another name")
			}
			if len(v.unknownNodes()) != 1 {
				t.Errorf("unknownNodes = %v, want the pod reported", v.unknownNodes())
			}
		})
	}
}

// TestMayDelete: the decision a condemned pod's delete waits for. Work
// the reconcile's list showed keeps the pod without a re-read; otherwise
// the node is read again after the drain and its fresh state decides.
func TestMayDelete(t *testing.T) {
	idle := slurmNode("ns-0", "", slurm.NodeStateIdle)
	drained := slurmNode("ns-0", "slurm-operator: x", slurm.NodeStateIdle, slurm.NodeStateDrain)
	busyDrained := slurmNode("ns-0", "slurm-operator: x", slurm.NodeStateAllocated, slurm.NodeStateDrain)
	for _, tt := range []struct {
		name   string
		listed []slurm.Node
		// then is the node as the re-read finds it; nil: as listed.
		then      *slurm.Node
		wantWork  podWork
		want      bool
		wantReads int
	}{
		{name: "listed busy: kept, not re-read", listed: []slurm.Node{busyDrained}, wantWork: workRunning},
		{name: "listed drained, still drained: deleted", listed: []slurm.Node{drained}, wantWork: workNone, want: true, wantReads: 1},
		{name: "listed drained, a job since: kept", listed: []slurm.Node{drained}, then: &busyDrained, wantWork: workNone, wantReads: 1},
		// The drain is the caller's; a node that still takes jobs stays.
		{name: "listed idle, not drained: kept", listed: []slurm.Node{idle}, wantWork: workPossible, wantReads: 1},
		{name: "listed idle, drained since: deleted", listed: []slurm.Node{idle}, then: &drained, wantWork: workPossible, want: true, wantReads: 1},
		// A Ready slurmd Slurm does not list may run jobs under another name.
		{name: "not listed, Ready: kept, not re-read", wantWork: workUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			slurmd := fake.New(tt.listed...)
			v := loadSlurmView(context.Background(), slurmd, t0)
			w := newWorker(makePod("ns-0").ready(t0).obj())
			listed := v.work(w)
			if listed != tt.wantWork {
				t.Fatalf("work = %v, want %v", listed, tt.wantWork)
			}
			if tt.then != nil {
				slurmd.SetNode(*tt.then)
			}
			got, err := v.mayDelete(context.Background(), w, listed)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("mayDelete = %v, want %v", got, tt.want)
			}
			if reads := slurmd.Calls(fake.OpGetNode); reads != tt.wantReads {
				t.Errorf("%d re-reads of the node, want %d", reads, tt.wantReads)
			}
			if unknown := len(v.unknownNodes()) > 0; unknown != (tt.wantWork == workUnknown) {
				t.Errorf("reported unknown = %v, want %v", unknown, tt.wantWork == workUnknown)
			}
		})
	}
}

// TestWorkersKeyTheDecisionBySlurmNodeName: a reconcile's workers carry
// the name each pod's slurmd registers as, computed once when the pods
// are claimed, and every step finds a claimed pod's own worker. The
// decision reads the node under that name: on the host network the
// Kubernetes node's, not the pod's.
func TestWorkersKeyTheDecisionBySlurmNodeName(t *testing.T) {
	hostNet := makePod("ns-0").ready(t0).obj()
	hostNet.Spec.HostNetwork = true
	hostNet.Spec.NodeName = "kn-7.example.org"
	plain := makePod("ns-1").ready(t0).obj()
	ws := newWorkers([]*corev1.Pod{hostNet, plain})
	if len(ws.list) != 2 || ws.list[0].slurmNode != "kn-7.example.org" || ws.list[1].slurmNode != "ns-1" {
		t.Fatalf("workers %+v, want kn-7.example.org and ns-1", ws.list)
	}
	if ws.of(hostNet) != ws.list[0] || ws.of(plain) != ws.list[1] {
		t.Error("a claimed pod did not find its own worker")
	}
	if got := ws.ofAll([]*corev1.Pod{plain, hostNet}); got[0] != ws.list[1] || got[1] != ws.list[0] {
		t.Error("ofAll did not find the claimed pods' workers")
	}
	// A pod that was not claimed (another object of the same name) gets a
	// worker of its own.
	if stranger := makePod("ns-1").obj(); ws.of(stranger) == ws.list[1] {
		t.Error("an unclaimed pod got a claimed pod's worker")
	}
	// Slurm lists the host's node busy and nothing under the pod's name.
	v := loadSlurmView(context.Background(), fake.New(slurmNode("kn-7.example.org", "", slurm.NodeStateAllocated)), t0)
	if work := v.work(ws.of(hostNet)); work != workRunning {
		t.Errorf("work = %v, want the host node's job (workRunning)", work)
	}
}
