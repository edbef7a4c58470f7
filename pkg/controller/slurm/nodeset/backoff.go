package nodeset

import (
	"time"

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Failed slurmd pods are replaced with an exponential delay per pod name
// (per node in DaemonSet mode), as Kubernetes' DaemonSet controller does
// for its failed pods, with the same client-go flowcontrol.Backoff: a pod
// that fails at once (a bad image, a slurmd that cannot start) is not
// recreated in a hot loop. The delay doubles with each failure up to
// FailedPodBackoffMax and is forgotten after twice that without a failure.
const (
	FailedPodBackoffInitial = 10 * time.Second
	FailedPodBackoffMax     = 5 * time.Minute
)

// newFailedPodBackoff returns the back-off of failed pods, on clk. Despite
// its name NewFakeBackOff is NewBackOff (no jitter) on a given clock.
func newFailedPodBackoff(clk clock.Clock) *flowcontrol.Backoff {
	return flowcontrol.NewFakeBackOff(FailedPodBackoffInitial, FailedPodBackoffMax, clk)
}

// podFailed records a failure of the pod under key now. It also drops the
// entries of pods that have not failed for twice the maximum delay (GC),
// which nothing else would forget: a pod that is never created again.
func podFailed(b *flowcontrol.Backoff, key string) {
	b.Next(key, b.Clock.Now())
	b.GC()
}

// backoffWait is how long the pod under key must wait before it is created
// again, 0 when it may be created now. As in the DaemonSet controller it is
// the pod's whole current delay, not what is left of it (flowcontrol.Backoff
// does not tell when the last failure was): a requeue after it comes back no
// sooner than the delay ends, and the first one, made as the failed pod is
// replaced, comes back about when it ends.
func backoffWait(b *flowcontrol.Backoff, key string) time.Duration {
	if !b.IsInBackOffSinceUpdate(key, b.Clock.Now()) {
		return 0
	}
	return b.Get(key)
}
