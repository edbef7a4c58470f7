package nodeset

import (
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
)

// backoffUnderTest drives the failed-pod back-off on a fake clock: fail
// records a failure of key now, wait is how long key must still wait now.
type backoffUnderTest struct {
	clk *clocktesting.FakeClock
	b   *flowcontrol.Backoff
}

func newBackoffUnderTest(t0 time.Time) *backoffUnderTest {
	clk := clocktesting.NewFakeClock(t0)
	return &backoffUnderTest{clk: clk, b: newFailedPodBackoff(clk)}
}

func (u *backoffUnderTest) fail(key string)               { podFailed(u.b, key) }
func (u *backoffUnderTest) wait(key string) time.Duration { return backoffWait(u.b, key) }

// TestFailedPodBackoff checks the documented back-off of failed pods: 10 s
// doubling per failure to 5 min, per key, forgotten after 10 min (twice the
// maximum) without a failure.
func TestFailedPodBackoff(t *testing.T) {
	const initial, maxDelay = FailedPodBackoffInitial, FailedPodBackoffMax
	if initial != 10*time.Second || maxDelay != 5*time.Minute {
		t.Fatalf("back-off %v..%v, documented as 10s..5m", initial, maxDelay)
	}
	type step struct {
		after time.Duration // the fake clock steps forward by this first
		key   string
		fail  bool // the pod under key fails now
		// Unless fail: whether key must wait now.
		inBackoff bool
		// With fail: the wait right after the failure (the new delay).
		delay time.Duration
	}
	fail := func(after time.Duration, key string, delay time.Duration) step {
		return step{after: after, key: key, fail: true, delay: delay}
	}
	waits := func(after time.Duration, key string) step { return step{after: after, key: key, inBackoff: true} }
	free := func(after time.Duration, key string) step { return step{after: after, key: key} }

	cases := []struct {
		name  string
		steps []step
	}{{
		name:  "a pod that never failed does not wait",
		steps: []step{free(0, "ns/a")},
	}, {
		name: "the delay doubles per failure from the initial delay and is capped at the maximum",
		steps: []step{
			fail(0, "ns/a", 10*time.Second),
			fail(10*time.Second, "ns/a", 20*time.Second),
			fail(20*time.Second, "ns/a", 40*time.Second),
			fail(40*time.Second, "ns/a", 80*time.Second),
			fail(80*time.Second, "ns/a", 160*time.Second),
			fail(160*time.Second, "ns/a", maxDelay), // 320 s capped
			fail(maxDelay, "ns/a", maxDelay),
			fail(maxDelay, "ns/a", maxDelay),
		},
	}, {
		name: "a failure during the back-off doubles it too",
		steps: []step{
			fail(0, "ns/a", 10*time.Second),
			fail(time.Second, "ns/a", 20*time.Second),
			fail(time.Second, "ns/a", 40*time.Second),
		},
	}, {
		name: "the pod waits until its delay is over",
		steps: []step{
			fail(0, "ns/a", 10*time.Second),
			waits(9*time.Second, "ns/a"),
			free(time.Second, "ns/a"),
			fail(time.Minute, "ns/a", 20*time.Second),
			waits(19*time.Second, "ns/a"),
			free(time.Second, "ns/a"),
		},
	}, {
		name: "after twice the maximum without a failure the back-off is forgotten",
		steps: []step{
			fail(0, "ns/a", 10*time.Second),
			fail(10*time.Second, "ns/a", 20*time.Second),
			fail(20*time.Second, "ns/a", 40*time.Second),
			free(2*maxDelay+time.Second, "ns/a"),
			fail(0, "ns/a", initial),
		},
	}, {
		name: "forgotten after twice the maximum even when it was never waited on",
		steps: []step{
			fail(0, "ns/a", 10*time.Second),
			fail(10*time.Second, "ns/a", 20*time.Second),
			fail(2*maxDelay+time.Second, "ns/a", initial),
		},
	}, {
		name: "at exactly twice the maximum it is still remembered",
		steps: []step{
			fail(0, "ns/a", 10*time.Second),
			fail(10*time.Second, "ns/a", 20*time.Second),
			fail(2*maxDelay, "ns/a", 40*time.Second),
		},
	}, {
		name: "pods back off independently",
		steps: []step{
			fail(0, "ns/a", 10*time.Second),
			fail(time.Second, "ns/a", 20*time.Second),
			fail(time.Second, "ns/a", 40*time.Second),
			free(0, "ns/b"),
			free(0, "other/a"),
			fail(0, "ns/b", initial), // t=2s
			waits(15*time.Second, "ns/a"),
			free(0, "ns/b"),
			fail(0, "ns/b", 20*time.Second), // t=17s
			waits(13*time.Second, "ns/a"),
			waits(0, "ns/b"),
			free(12*time.Second, "ns/a"), // t=42s
			free(0, "ns/b"),
			// At t=603s a (failed at 2s) is forgotten, b (at 17s) not yet.
			fail(2*maxDelay+time.Second-40*time.Second, "ns/b", 40*time.Second),
			fail(0, "ns/a", initial),
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := newBackoffUnderTest(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			var elapsed time.Duration
			for i, s := range c.steps {
				u.clk.Step(s.after)
				elapsed += s.after
				if s.fail {
					u.fail(s.key)
					if got := u.wait(s.key); got != s.delay {
						t.Errorf("step %d (+%v): %s failed: waits %v, want %v", i, elapsed, s.key, got, s.delay)
					}
					continue
				}
				if got := u.wait(s.key); (got > 0) != s.inBackoff {
					t.Errorf("step %d (+%v): %s waits %v, want in back-off %v", i, elapsed, s.key, got, s.inBackoff)
				}
			}
		})
	}
}

// TestFailedPodBackoffForgetsStalePods checks that a failure drops the
// entries of pods quiet for twice the maximum delay, which no wait would
// ever forget when their pods are not created again.
func TestFailedPodBackoffForgetsStalePods(t *testing.T) {
	u := newBackoffUnderTest(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	u.fail("ns/gone")
	u.fail("ns/gone")
	u.clk.Step(2 * FailedPodBackoffMax)
	u.fail("ns/other")
	if got := u.b.Get("ns/gone"); got != 2*FailedPodBackoffInitial {
		t.Errorf("quiet for exactly twice the maximum: delay %v, want still %v", got, 2*FailedPodBackoffInitial)
	}
	u.clk.Step(time.Second)
	u.fail("ns/other")
	if got := u.b.Get("ns/gone"); got != 0 {
		t.Errorf("quiet for longer than twice the maximum: still remembered with delay %v", got)
	}
	if got := u.b.Get("ns/other"); got != 2*FailedPodBackoffInitial {
		t.Errorf("the pod that failed again: delay %v, want %v", got, 2*FailedPodBackoffInitial)
	}
}

// TestFailedPodBackoffWaitIsWholeDelay pins what backoffWait answers during
// a back-off: the whole current delay, as the DaemonSet controller requeues.
func TestFailedPodBackoffWaitIsWholeDelay(t *testing.T) {
	u := newBackoffUnderTest(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	u.fail("ns/a")
	u.clk.Step(7 * time.Second)
	if got := u.wait("ns/a"); got != FailedPodBackoffInitial {
		t.Errorf("7s into the first back-off: wait %v, want %v", got, FailedPodBackoffInitial)
	}
}
