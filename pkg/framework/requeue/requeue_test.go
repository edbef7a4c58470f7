package requeue

import (
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestRequeueKeepsSoonest(t *testing.T) {
	tests := []struct {
		name     string
		requests []time.Duration
		want     time.Duration
		wantSet  bool
	}{
		{name: "no request", requests: nil, want: 0, wantSet: false},
		{name: "single request", requests: []time.Duration{30 * time.Second}, want: 30 * time.Second, wantSet: true},
		{name: "soonest wins regardless of order", requests: []time.Duration{time.Minute, 5 * time.Second, 30 * time.Second}, want: 5 * time.Second, wantSet: true},
		{name: "zero and negative are ignored", requests: []time.Duration{0, -time.Second, 10 * time.Second}, want: 10 * time.Second, wantSet: true},
		{name: "only non-positive requests", requests: []time.Duration{0, -time.Second}, want: 0, wantSet: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Requeue
			for _, d := range tc.requests {
				r.After(d)
			}
			got, set := r.Duration()
			if got != tc.want || set != tc.wantSet {
				t.Errorf("Duration() = (%v, %v), want (%v, %v)", got, set, tc.want, tc.wantSet)
			}
			if res := r.Result(); res.RequeueAfter != tc.want {
				t.Errorf("Result().RequeueAfter = %v, want %v", res.RequeueAfter, tc.want)
			}
		})
	}
}

func TestSoonest(t *testing.T) {
	tests := []struct {
		name    string
		results []ctrl.Result
		want    ctrl.Result
	}{
		{name: "nothing", want: ctrl.Result{}},
		{name: "empty results", results: []ctrl.Result{{}, {}}, want: ctrl.Result{}},
		{name: "one requeue", results: []ctrl.Result{{}, {RequeueAfter: time.Minute}}, want: ctrl.Result{RequeueAfter: time.Minute}},
		{name: "sooner wins", results: []ctrl.Result{{RequeueAfter: time.Minute}, {RequeueAfter: time.Second}}, want: ctrl.Result{RequeueAfter: time.Second}},
		{name: "first priority kept", results: []ctrl.Result{{}, {Priority: ptr.To(2)}, {Priority: ptr.To(5)}}, want: ctrl.Result{Priority: ptr.To(2)}},
		//nolint:staticcheck // The deprecated flag must survive merging.
		{name: "deprecated requeue flag kept", results: []ctrl.Result{{Requeue: true}, {RequeueAfter: time.Second}}, want: ctrl.Result{Requeue: true, RequeueAfter: time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Soonest(tc.results...)
			//nolint:staticcheck // Comparing the deprecated flag on purpose.
			if got.RequeueAfter != tc.want.RequeueAfter || got.Requeue != tc.want.Requeue || !equalPriority(got.Priority, tc.want.Priority) {
				t.Errorf("Soonest = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func equalPriority(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestMergeWithExistingResult(t *testing.T) {
	tests := []struct {
		name      string
		requested time.Duration
		existing  ctrl.Result
		want      time.Duration
	}{
		{name: "collected is sooner", requested: time.Second, existing: ctrl.Result{RequeueAfter: time.Minute}, want: time.Second},
		{name: "existing is sooner", requested: time.Minute, existing: ctrl.Result{RequeueAfter: time.Second}, want: time.Second},
		{name: "nothing collected keeps existing", existing: ctrl.Result{RequeueAfter: time.Minute}, want: time.Minute},
		{name: "nothing anywhere", want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Requeue
			r.After(tc.requested)
			if got := r.Merge(tc.existing).RequeueAfter; got != tc.want {
				t.Errorf("Merge().RequeueAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestConcurrentRequests is meant for `go test -race`.
func TestConcurrentRequests(t *testing.T) {
	var r Requeue
	var wg sync.WaitGroup
	for i := 1; i <= 100; i++ {
		wg.Go(func() { r.After(time.Duration(i) * time.Second) })
		wg.Go(func() { _ = r.Result() })
	}
	wg.Wait()
	if got, _ := r.Duration(); got != time.Second {
		t.Errorf("Duration() = %v, want 1s", got)
	}
}
