package nodeset

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
)

func slurmNode(name string, reason string, states ...slurm.NodeState) slurm.Node {
	return slurm.Node{Name: name, State: states, Reason: reason}
}

func TestDrainAndUndrain(t *testing.T) {
	pod := newWorker(makePod("ns-0").obj())
	readyPod := newWorker(makePod("ns-0").ready(t0).obj())
	tests := []struct {
		name        string
		node        slurm.Node
		op          func(*slurmView) error
		wantUpdates int
		wantDrain   bool
		wantDown    bool
		wantReason  string
	}{
		{
			name: "drain an idle node with Gantry's prefix", node: slurmNode("ns-0", "", slurm.NodeStateIdle),
			op:          func(v *slurmView) error { return v.drain(context.Background(), pod.slurmNode, "why") },
			wantUpdates: 1, wantDrain: true, wantReason: "slurm-operator: why",
		},
		{
			name: "a draining node keeps its reason and gets no write", node: slurmNode("ns-0", "admin says", slurm.NodeStateIdle, slurm.NodeStateDrain),
			op:          func(v *slurmView) error { return v.drain(context.Background(), pod.slurmNode, "why") },
			wantUpdates: 0, wantDrain: true, wantReason: "admin says",
		},
		{
			name: "undrain a node Gantry drained", node: slurmNode("ns-0", "slurm-operator: why", slurm.NodeStateIdle, slurm.NodeStateDrain),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), pod) },
			wantUpdates: 1, wantDrain: false,
		},
		{
			name: "never undrain an administrator's drain", node: slurmNode("ns-0", "bad DIMM", slurm.NodeStateIdle, slurm.NodeStateDrain),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), pod) },
			wantUpdates: 0, wantDrain: true, wantReason: "bad DIMM",
		},
		{
			name: "undrain of a node not drained sends nothing", node: slurmNode("ns-0", "", slurm.NodeStateIdle),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), pod) },
			wantUpdates: 0, wantDrain: false,
		},
		{
			name: "resume a node Gantry's preStop left DOWN once its pod is Ready", node: slurmNode("ns-0", "slurm-operator: Pod is terminating", slurm.NodeStateDown),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), readyPod) },
			wantUpdates: 1,
		},
		{
			name: "resume a node Gantry left DOWN and drained", node: slurmNode("ns-0", "slurm-operator: Pod is terminating", slurm.NodeStateDown, slurm.NodeStateDrain),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), readyPod) },
			wantUpdates: 1,
		},
		{
			name: "a DOWN node waits for its pod to be Ready", node: slurmNode("ns-0", "slurm-operator: Pod is terminating", slurm.NodeStateDown),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), pod) },
			wantUpdates: 0, wantDown: true, wantReason: "slurm-operator: Pod is terminating",
		},
		{
			// ReturnToService=2 lifted the preStop's DOWN when a slurmd
			// registered (the terminating one, or the new pod's, starting):
			// the DRAIN stays until the pod of that name is Ready.
			name: "a node the preStop drained waits for its pod to be Ready", node: slurmNode("ns-0", PreStopReason, slurm.NodeStateIdle, slurm.NodeStateDrain),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), pod) },
			wantUpdates: 0, wantDrain: true, wantReason: PreStopReason,
		},
		{
			name: "a node the preStop drained is undrained once its pod is Ready", node: slurmNode("ns-0", PreStopReason, slurm.NodeStateIdle, slurm.NodeStateDrain),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), readyPod) },
			wantUpdates: 1,
		},
		{
			name: "never resume an administrator's DOWN", node: slurmNode("ns-0", "PSU replaced", slurm.NodeStateDown),
			op:          func(v *slurmView) error { return v.undrain(context.Background(), readyPod) },
			wantUpdates: 0, wantDown: true, wantReason: "PSU replaced",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fake.New(tt.node)
			v := loadSlurmView(context.Background(), f, t0)
			if err := tt.op(v); err != nil {
				t.Fatal(err)
			}
			if got := len(f.Updates()); got != tt.wantUpdates {
				t.Errorf("updates = %d, want %d", got, tt.wantUpdates)
			}
			server, _ := f.Node("ns-0")
			cached, _ := v.node("ns-0")
			for _, n := range []slurm.Node{server, cached} {
				if n.IsDrain() != tt.wantDrain || n.IsDown() != tt.wantDown || n.Reason != tt.wantReason {
					t.Errorf("node = %v %q, want drain=%v down=%v reason %q", n.State, n.Reason, tt.wantDrain, tt.wantDown, tt.wantReason)
				}
				if !tt.wantDown && n.IsDown() == n.IsIdle() {
					t.Errorf("node = %v, want IDLE once resumed", n.State)
				}
			}
		})
	}
}

func TestNodeDeadlines(t *testing.T) {
	now := t0
	job := func(id int64, nodes string, end time.Time, states ...slurm.JobState) slurm.Job {
		return slurm.Job{JobID: id, Nodes: nodes, State: states, EndTime: slurm.NewNoVal(end.Unix()), TimeLimit: slurm.NewNoVal(60)}
	}
	jobs := []slurm.Job{
		job(1, "ns-[0-1]", now.Add(time.Hour), slurm.JobStateRunning),
		job(2, "ns-1", now.Add(3*time.Hour), slurm.JobStateRunning),
		job(3, "ns-2", now.Add(9*time.Hour), slurm.JobStatePending),
		{JobID: 4, Nodes: "ns-3", State: []slurm.JobState{slurm.JobStateRunning}, TimeLimit: slurm.InfiniteNoVal()},
		// A suspended job's clock stops: its end is not known.
		job(5, "ns-4", now.Add(time.Hour), slurm.JobStateSuspended),
	}
	got := nodeDeadlines(jobs)
	if !got["ns-4"].After(now.Add(24 * 365 * time.Hour)) {
		t.Errorf("deadline of ns-4 (a suspended job) = %v, want none (far away)", got["ns-4"])
	}
	want := map[string]time.Time{"ns-0": now.Add(time.Hour), "ns-1": now.Add(3 * time.Hour)}
	for name, w := range want {
		if !got[name].Equal(w) {
			t.Errorf("deadline of %s = %v, want %v", name, got[name], w)
		}
	}
	if _, ok := got["ns-2"]; ok {
		t.Error("a pending job gave its node a deadline")
	}
	if !got["ns-3"].After(now.Add(24 * 365 * time.Hour)) {
		t.Errorf("a job without a time limit should put its node last, got %v", got["ns-3"])
	}
	// The far deadlines are the job's, not the clock's: the pod-deadline
	// annotation written from them would change at every reconcile.
	started := now.Add(-2 * time.Hour)
	unlimited := slurm.Job{JobID: 6, Nodes: "ns-5", State: []slurm.JobState{slurm.JobStateRunning},
		StartTime: slurm.NewNoVal(started.Unix()), TimeLimit: slurm.InfiniteNoVal()}
	if d := nodeDeadlines([]slurm.Job{unlimited})["ns-5"]; !d.Equal(started.Add(farDeadline)) {
		t.Errorf("deadline of a job without a time limit started at %v = %v, want its start + %v", started, d, farDeadline)
	}
	if !got["ns-3"].Equal(noStartDeadline) {
		t.Errorf("deadline of a job without a limit or a start = %v, want %v", got["ns-3"], noStartDeadline)
	}
}

func TestSlurmViewReadsOnce(t *testing.T) {
	f := fake.New(slurmNode("ns-0", "", slurm.NodeStateIdle), slurmNode("ns-1", "", slurm.NodeStateAllocated))
	v := loadSlurmView(context.Background(), f, t0)
	pods := newWorkers([]*corev1.Pod{makePod("ns-0").obj(), makePod("ns-1").obj()}).list
	for range 3 {
		_ = v.counts(pods)
		for _, p := range pods {
			_ = v.mayRunJobs(p)
		}
	}
	if f.Calls(fake.OpListNodes) != 1 || f.Calls(fake.OpGetNode) != 0 {
		t.Errorf("ListNodes %d, GetNode %d: want one list and no per-pod reads", f.Calls(fake.OpListNodes), f.Calls(fake.OpGetNode))
	}
	if c := v.counts(pods); c.idle != 1 || c.allocated != 1 {
		t.Errorf("counts = %+v", c)
	}
}

func TestPodStatesForMetrics(t *testing.T) {
	client := fake.New(
		slurmNode("ns-0", "", slurm.NodeStateIdle),
		slurmNode("ns-1", "x", slurm.NodeStateMixed, slurm.NodeStateDrain),
		slurmNode("ns-2", "x", slurm.NodeStateIdle, slurm.NodeStateDrain),
		slurmNode("ns-3", "", slurm.NodeStateAllocated),
	)
	view := loadSlurmView(context.Background(), client, t0)
	pods := newWorkers([]*corev1.Pod{makePod("ns-0").obj(), makePod("ns-1").obj(), makePod("ns-2").obj(), makePod("ns-3").obj(), makePod("ns-4").obj()})
	got := view.podStates(pods.list)
	want := slurmmetrics.PodCounts{Draining: 1, Drained: 1, Busy: 2}
	if got != want {
		t.Fatalf("podStates = %+v, want %+v (ns-4 is not listed and counts nowhere)", got, want)
	}
}
