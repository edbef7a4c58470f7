package expectations

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	owner = "default/rc"
	head  = "head"
	cpu   = "cpu"
)

// step is one action on the store followed by the Satisfied answer the
// group under test must give afterwards.
type step struct {
	do   func(e *Expectations, clk *clocktesting.FakeClock)
	want bool
}

func expectCreations(group string, n int) func(*Expectations, *clocktesting.FakeClock) {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.ExpectCreations(owner, group, n) }
}

func observeCreation(group string, uid types.UID) func(*Expectations, *clocktesting.FakeClock) {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.CreationObserved(owner, group, uid) }
}

func cancelCreations(group string, n int) func(*Expectations, *clocktesting.FakeClock) {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.CancelCreations(owner, group, n) }
}

func expectDeletions(group string, uids ...types.UID) func(*Expectations, *clocktesting.FakeClock) {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.ExpectDeletions(owner, group, uids...) }
}

func observeDeletion(group string, uid types.UID) func(*Expectations, *clocktesting.FakeClock) {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.DeletionObserved(owner, group, uid) }
}

func cancelDeletions(group string, uids ...types.UID) func(*Expectations, *clocktesting.FakeClock) {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.CancelDeletions(owner, group, uids...) }
}

func advance(d time.Duration) func(*Expectations, *clocktesting.FakeClock) {
	return func(_ *Expectations, clk *clocktesting.FakeClock) { clk.Step(d) }
}

func forgetOwner() func(*Expectations, *clocktesting.FakeClock) {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.Delete(owner) }
}

func TestSatisfiedTransitions(t *testing.T) {
	const ttl = time.Minute
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name:  "nothing expected",
			steps: []step{{do: advance(0), want: true}},
		},
		{
			name: "creations satisfied once every pod is observed",
			steps: []step{
				{do: expectCreations(cpu, 2), want: false},
				{do: observeCreation(cpu, "a"), want: false},
				{do: observeCreation(cpu, "b"), want: true},
			},
		},
		{
			name: "the same pod observed twice counts once",
			steps: []step{
				{do: expectCreations(cpu, 2), want: false},
				{do: observeCreation(cpu, "a"), want: false},
				{do: observeCreation(cpu, "a"), want: false},
				{do: observeCreation(cpu, "b"), want: true},
			},
		},
		{
			name: "pods observed without an expectation are ignored",
			steps: []step{
				{do: observeCreation(cpu, "old"), want: true},
				{do: expectCreations(cpu, 1), want: false},
				{do: observeCreation(cpu, "new"), want: true},
			},
		},
		{
			name: "a pod of another group does not satisfy this group",
			steps: []step{
				{do: expectCreations(cpu, 1), want: false},
				{do: observeCreation(head, "h"), want: false},
			},
		},
		{
			name: "failed creates are given back",
			steps: []step{
				{do: expectCreations(cpu, 5), want: false},
				{do: observeCreation(cpu, "a"), want: false},
				{do: cancelCreations(cpu, 4), want: true},
			},
		},
		{
			name: "deletions satisfied once every uid is observed",
			steps: []step{
				{do: expectDeletions(cpu, "a", "b"), want: false},
				{do: observeDeletion(cpu, "a"), want: false},
				{do: observeDeletion(cpu, "unrelated"), want: false},
				{do: observeDeletion(cpu, "b"), want: true},
			},
		},
		{
			// A reconcile that listed its pods before their deletion
			// events came (the informer ran in between) deletes them again:
			// no event will come a second time, and the owner must not wait
			// for the TTL.
			name: "deletions already observed are not expected again",
			steps: []step{
				{do: expectDeletions(cpu, "a", "b"), want: false},
				{do: observeDeletion(cpu, "a"), want: false},
				{do: observeDeletion(cpu, "b"), want: true},
				{do: expectDeletions(cpu, "a", "b"), want: true},
				{do: expectDeletions(cpu, "b", "c"), want: false},
				{do: observeDeletion(cpu, "c"), want: true},
			},
		},
		{
			name: "a deletion observed before anyone expected it",
			steps: []step{
				{do: observeDeletion(cpu, "x"), want: true},
				{do: expectDeletions(cpu, "x"), want: true},
			},
		},
		{
			name: "observed deletions are remembered for a while only",
			steps: []step{
				{do: observeDeletion(cpu, "x"), want: true},
				{do: advance(goneWindow + time.Second), want: true},
				{do: expectDeletions(cpu, "x"), want: false},
			},
		},
		{
			name: "a cancelled deletion is not taken as observed",
			steps: []step{
				{do: expectDeletions(cpu, "a"), want: false},
				{do: cancelDeletions(cpu, "a"), want: true},
				{do: expectDeletions(cpu, "a"), want: false},
			},
		},
		{
			name: "failed deletes are cancelled",
			steps: []step{
				{do: expectDeletions(cpu, "a", "b"), want: false},
				{do: observeDeletion(cpu, "a"), want: false},
				{do: cancelDeletions(cpu, "b"), want: true},
			},
		},
		{
			name: "creations and deletions must both be fulfilled",
			steps: []step{
				{do: expectCreations(cpu, 1), want: false},
				{do: expectDeletions(cpu, "old"), want: false},
				{do: observeCreation(cpu, "new"), want: false},
				{do: observeDeletion(cpu, "old"), want: true},
			},
		},
		{
			name: "expired expectations stop blocking",
			steps: []step{
				{do: expectCreations(cpu, 1), want: false},
				{do: advance(ttl), want: false},
				{do: advance(time.Second), want: true},
			},
		},
		{
			name: "a new raise restarts the ttl",
			steps: []step{
				{do: expectCreations(cpu, 1), want: false},
				{do: advance(ttl - time.Second), want: false},
				{do: expectDeletions(cpu, "x"), want: false},
				{do: advance(2 * time.Second), want: false},
				{do: advance(ttl), want: true},
			},
		},
		{
			name: "a raise after expiry starts from zero",
			steps: []step{
				{do: expectCreations(cpu, 3), want: false},
				// No query between expiry and the next raise, so the raise
				// itself must discard the stale count.
				{do: func(e *Expectations, clk *clocktesting.FakeClock) {
					clk.Step(ttl + time.Second)
					e.ExpectCreations(owner, cpu, 1)
				}, want: false},
				{do: observeCreation(cpu, "a"), want: true},
			},
		},
		{
			name: "forgetting the owner clears all groups",
			steps: []step{
				{do: expectCreations(cpu, 1), want: false},
				{do: expectDeletions(head, "h"), want: false},
				{do: forgetOwner(), want: true},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e := New(withTTL(ttl), WithClock(clk))
			for i, s := range tc.steps {
				s.do(e, clk)
				// Query through SatisfiedAll too: it must agree when only
				// one group is in play, and both must not disturb state.
				if got := e.SatisfiedAll(owner); got != s.want {
					t.Fatalf("step %d: SatisfiedAll = %v, want %v", i, got, s.want)
				}
				if got := e.Satisfied(owner, cpu); got != s.want {
					t.Fatalf("step %d: Satisfied = %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

func TestSatisfiedAllWaitsForEveryGroup(t *testing.T) {
	e := New()
	e.ExpectCreations(owner, head, 1)
	e.ExpectCreations(owner, cpu, 1)
	e.ExpectCreations("default/other", cpu, 1)

	e.CreationObserved(owner, head, "h")
	if !e.Satisfied(owner, head) {
		t.Error("head group should be satisfied")
	}
	if e.SatisfiedAll(owner) {
		t.Error("owner should wait for its cpu group")
	}
	e.CreationObserved(owner, cpu, "w")
	if !e.SatisfiedAll(owner) {
		t.Error("owner should be satisfied once all groups are")
	}
	if e.SatisfiedAll("default/other") {
		t.Error("another owner must not be affected")
	}
}

func TestPendingReportsOutstandingWork(t *testing.T) {
	e := New()
	e.ExpectCreations(owner, cpu, 3)
	e.ExpectDeletions(owner, cpu, "a", "b")
	e.CreationObserved(owner, cpu, "x")
	e.DeletionObserved(owner, cpu, "a")
	creations, deletions := e.Pending(owner, cpu)
	if creations != 2 || deletions != 1 {
		t.Errorf("Pending = (%d, %d), want (2, 1)", creations, deletions)
	}
}

// TestConcurrentUse is meant for `go test -race`: controllers raise from
// reconcile goroutines while informer handlers observe.
func TestConcurrentUse(t *testing.T) {
	const owners, podsPerOwner = 8, 50
	e := New()
	for o := range owners {
		e.ExpectCreations(fmt.Sprintf("ns/o%d", o), cpu, podsPerOwner)
		uids := make([]types.UID, podsPerOwner)
		for p := range uids {
			uids[p] = types.UID(fmt.Sprintf("del-%d-%d", o, p))
		}
		e.ExpectDeletions(fmt.Sprintf("ns/o%d", o), head, uids...)
	}

	var wg sync.WaitGroup
	for o := range owners {
		key := fmt.Sprintf("ns/o%d", o)
		for p := range podsPerOwner {
			wg.Go(func() { e.CreationObserved(key, cpu, types.UID(fmt.Sprintf("new-%d-%d", o, p))) })
			wg.Go(func() { e.DeletionObserved(key, head, types.UID(fmt.Sprintf("del-%d-%d", o, p))) })
			wg.Go(func() { _ = e.SatisfiedAll(key) })
			wg.Go(func() { _, _ = e.Pending(key, cpu) })
		}
	}
	wg.Wait()

	for o := range owners {
		if key := fmt.Sprintf("ns/o%d", o); !e.SatisfiedAll(key) {
			c, d := e.Pending(key, cpu)
			t.Errorf("%s not satisfied after all events: %d creations, %d deletions pending", key, c, d)
		}
	}
}

// withTTL sets how long an unfulfilled expectation blocks its group.
func withTTL(ttl time.Duration) Option {
	return func(e *Expectations) { e.ttl = ttl }
}
