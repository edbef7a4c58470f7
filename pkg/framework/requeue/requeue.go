package requeue

import (
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Requeue is the soonest requested requeue of one reconcile. The zero value
// holds no request. It must not be copied after first use.
type Requeue struct {
	mu    sync.Mutex
	after time.Duration
}

// After asks for another reconcile no later than d from now.
func (r *Requeue) After(d time.Duration) {
	if d <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.after == 0 || d < r.after {
		r.after = d
	}
}

// Duration returns the soonest requested delay and whether any was requested.
func (r *Requeue) Duration() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.after, r.after > 0
}

// Result is the ctrl.Result that honours the soonest request.
func (r *Requeue) Result() ctrl.Result {
	d, _ := r.Duration()
	return ctrl.Result{RequeueAfter: d}
}

// Merge folds the collected request into a result computed elsewhere (e.g.
// by a sub-reconciler), keeping the sooner of the two.
func (r *Requeue) Merge(res ctrl.Result) ctrl.Result {
	return Soonest(res, r.Result())
}

// Soonest combines results: the smallest positive RequeueAfter wins, and the
// first non-nil Priority is kept.
func Soonest(results ...ctrl.Result) ctrl.Result {
	var out ctrl.Result
	for _, res := range results {
		if res.RequeueAfter > 0 && (out.RequeueAfter == 0 || res.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = res.RequeueAfter
		}
		//nolint:staticcheck // Sub-reconcilers may still set the deprecated flag; dropping it would lose their retry.
		out.Requeue = out.Requeue || res.Requeue
		if out.Priority == nil {
			out.Priority = res.Priority
		}
	}
	return out
}
