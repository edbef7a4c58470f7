package fake

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/gantry-dev/gantry/pkg/slurm"
)

func node(name string, states ...slurm.NodeState) slurm.Node {
	return slurm.Node{Name: name, State: states, CPUs: 4}
}

func TestUpdateNodeFollowsSlurmStateRules(t *testing.T) {
	tests := []struct {
		name       string
		start      slurm.Node
		update     slurm.NodeUpdate
		wantStates []slurm.NodeState
		wantReason string
		wantErr    bool
	}{
		{
			name:       "drain idle node is drained at once",
			start:      node("n", slurm.NodeStateIdle),
			update:     slurm.DrainUpdate("cordoned"),
			wantStates: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain},
			wantReason: "cordoned",
		},
		{
			name:       "drain twice keeps one flag",
			start:      slurm.Node{Name: "n", State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: "old"},
			update:     slurm.DrainUpdate("new"),
			wantStates: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain},
			wantReason: "new",
		},
		{
			name:       "undrain clears flag and reason",
			start:      slurm.Node{Name: "n", State: []slurm.NodeState{slurm.NodeStateMixed, slurm.NodeStateDrain}, Reason: "r"},
			update:     slurm.UndrainUpdate(),
			wantStates: []slurm.NodeState{slurm.NodeStateMixed},
		},
		{
			name:       "resume brings a down node back",
			start:      slurm.Node{Name: "n", State: []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateDrain}, Reason: "Not responding"},
			update:     slurm.ResumeUpdate(),
			wantStates: []slurm.NodeState{slurm.NodeStateIdle},
		},
		{
			name:       "unknown state is refused and nothing changes",
			start:      slurm.Node{Name: "n", State: []slurm.NodeState{slurm.NodeStateIdle}, Reason: "keep"},
			update:     slurm.NodeUpdate{State: []slurm.NodeState{"BOGUS"}, Reason: new(string)},
			wantStates: []slurm.NodeState{slurm.NodeStateIdle},
			wantReason: "keep",
			wantErr:    true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tc.start)
			err := c.UpdateNode(context.Background(), "n", tc.update)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			got, _ := c.Node("n")
			if !reflect.DeepEqual(got.State, tc.wantStates) || got.Reason != tc.wantReason {
				t.Errorf("node = %v %q, want %v %q", got.State, got.Reason, tc.wantStates, tc.wantReason)
			}
			if wantCalls := map[bool]int{true: 0, false: 1}[tc.wantErr]; len(c.Updates()) != wantCalls {
				t.Errorf("recorded %d updates, want %d", len(c.Updates()), wantCalls)
			}
		})
	}
}

func TestDrainThenDrainedDependsOnWork(t *testing.T) {
	busy := node("busy", slurm.NodeStateAllocated)
	busy.AllocCPUs = 4
	c := New(busy, node("idle", slurm.NodeStateIdle))
	ctx := context.Background()
	for _, name := range []string{"busy", "idle"} {
		if err := c.UpdateNode(ctx, name, slurm.DrainUpdate("scale-in")); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := c.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range nodes {
		got[n.Name] = n.IsDrained()
	}
	if want := map[string]bool{"busy": false, "idle": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("drained = %v, want %v", got, want)
	}
}

func TestUnknownNodeIsNotFound(t *testing.T) {
	c := New()
	ctx := context.Background()
	if _, err := c.GetNode(ctx, "ghost"); !slurm.IsNotFound(err) {
		t.Errorf("GetNode err = %v, want not found", err)
	}
	if err := c.UpdateNode(ctx, "ghost", slurm.ResumeUpdate()); !slurm.IsNotFound(err) {
		t.Errorf("UpdateNode err = %v, want not found", err)
	}
}

func TestInjectedErrorsAndCallCounts(t *testing.T) {
	c := New(node("n", slurm.NodeStateIdle))
	ctx := context.Background()
	boom := errors.New("slurmrestd down")
	ops := map[Op]func() error{
		OpPing:       func() error { return c.Ping(ctx) },
		OpListNodes:  func() error { _, err := c.ListNodes(ctx); return err },
		OpGetNode:    func() error { _, err := c.GetNode(ctx, "n"); return err },
		OpUpdateNode: func() error { return c.UpdateNode(ctx, "n", slurm.CommentUpdate("x")) },
		OpListJobs:   func() error { _, err := c.ListJobs(ctx); return err },
	}
	for op, call := range ops {
		t.Run(string(op), func(t *testing.T) {
			c.SetError(op, boom)
			if err := call(); !errors.Is(err, boom) {
				t.Errorf("with error injected: %v, want %v", err, boom)
			}
			c.SetError(op, nil)
			if err := call(); err != nil {
				t.Errorf("after clearing: %v", err)
			}
			if c.Calls(op) != 2 {
				t.Errorf("Calls(%s) = %d, want 2", op, c.Calls(op))
			}
		})
	}
}

func TestReturnedValuesAreCopies(t *testing.T) {
	c := New(node("n", slurm.NodeStateIdle))
	c.SetJobs(slurm.Job{JobID: 1, State: []slurm.JobState{slurm.JobStateRunning}, Nodes: "n"})
	ctx := context.Background()
	got, _ := c.GetNode(ctx, "n")
	got.State[0] = slurm.NodeStateDown
	jobs, _ := c.ListJobs(ctx)
	jobs[0].State[0] = slurm.JobStateFailed

	again, _ := c.GetNode(ctx, "n")
	if !again.IsIdle() {
		t.Errorf("caller's change leaked into the fake: %v", again.State)
	}
	jobsAgain, _ := c.ListJobs(ctx)
	if !jobsAgain[0].IsRunning() {
		t.Errorf("caller's change leaked into the fake's jobs: %v", jobsAgain[0].State)
	}
}

func TestHonoursCancelledContext(t *testing.T) {
	c := New(node("n", slurm.NodeStateIdle))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ListNodes(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestDeleteNodeRefusesNodesRunningJobs(t *testing.T) {
	ctx := context.Background()
	c := New(node("idle", slurm.NodeStateDown, slurm.NodeStateNotResponding),
		node("alloc", slurm.NodeStateAllocated),
		node("listed", slurm.NodeStateDown))
	c.SetJobs(slurm.Job{JobID: 1, Nodes: "listed", State: []slurm.JobState{slurm.JobStateRunning}})
	for _, name := range []string{"alloc", "listed"} {
		if err := c.DeleteNode(ctx, name); err == nil {
			t.Errorf("DeleteNode(%s) deleted a node that runs a job", name)
		}
	}
	if err := c.DeleteNode(ctx, "idle"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Node("idle"); ok {
		t.Error("idle is still listed")
	}
	if err := c.DeleteNode(ctx, "idle"); !slurm.IsNotFound(err) {
		t.Errorf("second DeleteNode = %v, want not found", err)
	}
	if got := c.Deleted(); !reflect.DeepEqual(got, []string{"idle"}) {
		t.Errorf("Deleted() = %v", got)
	}
}
