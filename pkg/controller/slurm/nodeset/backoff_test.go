package nodeset

import (
	"testing"
	"time"
)

func TestFailedPodBackoff(t *testing.T) {
	b := newFailedPodBackoff(10*time.Second, 40*time.Second)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if w := b.wait("ns/a", t0); w != 0 {
		t.Fatalf("a pod that never failed waits %v", w)
	}
	steps := []struct {
		at        time.Duration
		wantDelay time.Duration
	}{{0, 10 * time.Second}, {15 * time.Second, 20 * time.Second}, {40 * time.Second, 40 * time.Second}, {90 * time.Second, 40 * time.Second}}
	for _, s := range steps {
		if got := b.failed("ns/a", t0.Add(s.at)); got != s.wantDelay {
			t.Errorf("failure at +%v: delay %v, want %v", s.at, got, s.wantDelay)
		}
	}
	last := t0.Add(90 * time.Second)
	if w := b.wait("ns/a", last.Add(30*time.Second)); w != 10*time.Second {
		t.Errorf("30s into a 40s back-off: wait %v, want 10s", w)
	}
	if w := b.wait("ns/b", last); w != 0 {
		t.Errorf("another pod waits %v", w)
	}
	// Quiet for twice the maximum: forgotten, the next failure starts over.
	if w := b.wait("ns/a", last.Add(81*time.Second)); w != 0 {
		t.Errorf("after a long quiet: wait %v", w)
	}
	if got := b.failed("ns/a", last.Add(200*time.Second)); got != 10*time.Second {
		t.Errorf("first failure after a long quiet: delay %v, want 10s", got)
	}
}
