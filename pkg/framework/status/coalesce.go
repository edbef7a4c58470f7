package status

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Coalescer lets status changes that nobody needs at once (counters that a
// child object moves several times in a few seconds) wait, so that one
// object's changes within a window become one write. The first such change of
// an object opens its window; the change is written when the window ends,
// with every change that came during it. A change that is not held (a
// condition) is written at once and closes the window, so nothing waits
// longer than the window and nothing that matters waits at all.
//
// Windows live in memory: after a restart the next held change opens a new
// one. Safe for concurrent use.
type Coalescer struct {
	window time.Duration
	clock  clock.PassiveClock

	mu     sync.Mutex
	opened map[types.NamespacedName]time.Time
}

// NewCoalescer returns a Coalescer with the given window; clk nil means the
// real clock.
func NewCoalescer(window time.Duration, clk clock.PassiveClock) *Coalescer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Coalescer{window: window, clock: clk, opened: map[types.NamespacedName]time.Time{}}
}

// Hold is asked when key's status changed in a way that may wait. It
// returns how long the write may still wait, opening key's window when
// none is open; 0 means write now. A Coalescer with no window never holds.
func (c *Coalescer) Hold(key types.NamespacedName) time.Duration {
	if c == nil || c.window <= 0 {
		return 0
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	opened, ok := c.opened[key]
	if !ok {
		c.opened[key] = now
		return c.window
	}
	return max(opened.Add(c.window).Sub(now), 0)
}

// Close ends key's window: its status was written, or has nothing left to
// write, or the object is gone.
func (c *Coalescer) Close(key types.NamespacedName) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.opened, key)
	c.mu.Unlock()
}
