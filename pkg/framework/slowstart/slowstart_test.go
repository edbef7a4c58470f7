package slowstart

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// barrierTimeout only guards against a hang when the implementation runs
// fewer calls concurrently than the test expects; it is never reached when
// the batches are right.
const barrierTimeout = 10 * time.Second

// batchProbe checks the batch shape while SlowStartBatch runs: every call of
// an expected batch blocks until all members of that batch have arrived (so
// the batch must really run in parallel), and no call may start before every
// call of the previous batches has returned (so batches must not overlap or
// be larger than expected).
type batchProbe struct {
	sizes    []int
	starts   []int
	barriers []chan struct{}

	mu        sync.Mutex
	arrived   []int
	completed int
	calls     map[int]int
	problems  []string
}

func newBatchProbe(sizes []int) *batchProbe {
	p := &batchProbe{sizes: sizes, calls: map[int]int{}, arrived: make([]int, len(sizes))}
	offset := 0
	for _, size := range sizes {
		p.starts = append(p.starts, offset)
		p.barriers = append(p.barriers, make(chan struct{}))
		offset += size
	}
	return p
}

func (p *batchProbe) batchOf(index int) int {
	for b := range p.sizes {
		if index >= p.starts[b] && index < p.starts[b]+p.sizes[b] {
			return b
		}
	}
	return -1
}

func (p *batchProbe) call(index int) error {
	batch := p.batchOf(index)
	p.mu.Lock()
	p.calls[index]++
	if batch < 0 {
		p.problems = append(p.problems, fmt.Sprintf("unexpected call for index %d", index))
		p.mu.Unlock()
		return nil
	}
	if p.completed < p.starts[batch] {
		p.problems = append(p.problems, fmt.Sprintf("index %d (batch %d) started while only %d of the %d earlier calls had returned",
			index, batch, p.completed, p.starts[batch]))
	}
	p.arrived[batch]++
	if p.arrived[batch] == p.sizes[batch] {
		close(p.barriers[batch])
	}
	p.mu.Unlock()

	select {
	case <-p.barriers[batch]:
	case <-time.After(barrierTimeout):
		p.mu.Lock()
		p.problems = append(p.problems, fmt.Sprintf("batch %d never reached %d concurrent calls (index %d waited alone)", batch, p.sizes[batch], index))
		p.mu.Unlock()
	}

	p.mu.Lock()
	p.completed++
	p.mu.Unlock()
	return nil
}

func TestSlowStartBatchSizes(t *testing.T) {
	tests := []struct {
		name         string
		count        int
		initialBatch int
		wantBatches  []int
	}{
		{name: "no work", count: 0, initialBatch: 1, wantBatches: nil},
		{name: "negative count", count: -3, initialBatch: 1, wantBatches: nil},
		{name: "single call", count: 1, initialBatch: 1, wantBatches: []int{1}},
		{name: "exact powers of two", count: 7, initialBatch: 1, wantBatches: []int{1, 2, 4}},
		{name: "last batch truncated", count: 10, initialBatch: 1, wantBatches: []int{1, 2, 4, 3}},
		{name: "larger initial batch", count: 10, initialBatch: 3, wantBatches: []int{3, 6, 1}},
		{name: "initial batch larger than count", count: 4, initialBatch: 16, wantBatches: []int{4}},
		{name: "zero initial batch behaves as one", count: 3, initialBatch: 0, wantBatches: []int{1, 2}},
		{name: "many calls", count: 40, initialBatch: 1, wantBatches: []int{1, 2, 4, 8, 16, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			probe := newBatchProbe(tc.wantBatches)
			successes, err := SlowStartBatch(tc.count, tc.initialBatch, probe.call)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			wantCalls := max(tc.count, 0)
			if successes != wantCalls {
				t.Errorf("successes = %d, want %d", successes, wantCalls)
			}
			for _, problem := range probe.problems {
				t.Error(problem)
			}
			for i := range wantCalls {
				if probe.calls[i] != 1 {
					t.Errorf("index %d called %d times, want once", i, probe.calls[i])
				}
			}
			if len(probe.calls) != wantCalls {
				t.Errorf("%d distinct indices called, want %d", len(probe.calls), wantCalls)
			}
		})
	}
}

func TestSlowStartBatchStopsAfterFailingBatch(t *testing.T) {
	tests := []struct {
		name          string
		count         int
		initialBatch  int
		failing       []int
		wantSuccesses int
		wantCalled    int // indices 0..wantCalled-1 are called, none after
	}{
		{
			// Batches [0] [1,2] [3..6] [7..14] [15..19]: index 4 is in batch 3.
			name: "failure in third batch", count: 20, initialBatch: 1,
			failing: []int{4}, wantSuccesses: 6, wantCalled: 7,
		},
		{
			name: "two failures in the same batch are both reported", count: 20, initialBatch: 1,
			failing: []int{3, 6}, wantSuccesses: 5, wantCalled: 7,
		},
		{
			name: "failure in first batch stops everything", count: 20, initialBatch: 2,
			failing: []int{1}, wantSuccesses: 1, wantCalled: 2,
		},
		{
			name: "failure in the last batch", count: 5, initialBatch: 1,
			failing: []int{4}, wantSuccesses: 4, wantCalled: 5,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var called []int
			sentinels := map[int]error{}
			for _, i := range tc.failing {
				sentinels[i] = fmt.Errorf("create %d refused", i)
			}

			successes, err := SlowStartBatch(tc.count, tc.initialBatch, func(index int) error {
				mu.Lock()
				called = append(called, index)
				mu.Unlock()
				return sentinels[index]
			})

			if successes != tc.wantSuccesses {
				t.Errorf("successes = %d, want %d", successes, tc.wantSuccesses)
			}
			if err == nil {
				t.Fatal("expected an error")
			}
			for i, sentinel := range sentinels {
				if !errors.Is(err, sentinel) {
					t.Errorf("error %q does not wrap the failure of index %d", err, i)
				}
			}
			slices.Sort(called)
			want := make([]int, tc.wantCalled)
			for i := range want {
				want[i] = i
			}
			if !slices.Equal(called, want) {
				t.Errorf("called indices %v, want %v", called, want)
			}
		})
	}
}

func TestSlowStartBatchRecoversPanics(t *testing.T) {
	successes, err := SlowStartBatch(3, 1, func(index int) error {
		if index == 2 {
			panic("boom")
		}
		return nil
	})
	if successes != 2 {
		t.Errorf("successes = %d, want 2", successes)
	}
	if err == nil || !strings.Contains(err.Error(), "index 2 panicked: boom") {
		t.Errorf("error = %v, want the panic of index 2", err)
	}
}
