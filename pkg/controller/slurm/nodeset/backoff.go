package nodeset

import (
	"sync"
	"time"
)

// Failed slurmd pods are replaced with an exponential delay per pod name,
// as Kubernetes' DaemonSet controller does for its failed pods: a pod that
// fails at once (a bad image, a slurmd that cannot start) is not recreated
// in a hot loop. The delay doubles with each failure up to
// FailedPodBackoffMax and is forgotten after twice that without a failure.
const (
	FailedPodBackoffInitial = 10 * time.Second
	FailedPodBackoffMax     = 5 * time.Minute
)

// failedPodBackoff remembers, per pod, when it may be created again.
type failedPodBackoff struct {
	initial, max time.Duration

	mu      sync.Mutex
	entries map[string]backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastFailed time.Time
}

func newFailedPodBackoff(initial, max time.Duration) *failedPodBackoff {
	return &failedPodBackoff{initial: initial, max: max, entries: map[string]backoffEntry{}}
}

// failed records a failure of the pod at now and returns the delay before
// it may be created again.
func (b *failedPodBackoff) failed(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	switch {
	case !ok || now.Sub(e.lastFailed) > 2*b.max:
		e.delay = b.initial
	default:
		e.delay = min(2*e.delay, b.max)
	}
	e.lastFailed = now
	b.entries[key] = e
	return e.delay
}

// wait is how long the pod must still wait at now (0: create it).
func (b *failedPodBackoff) wait(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return 0
	}
	if now.Sub(e.lastFailed) > 2*b.max {
		delete(b.entries, key)
		return 0
	}
	return max(0, e.lastFailed.Add(e.delay).Sub(now))
}
