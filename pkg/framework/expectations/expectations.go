package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// DefaultTTL bounds how long an unfulfilled expectation blocks an owner.
const DefaultTTL = 5 * time.Minute

// goneWindow is how long a deletion stays remembered once observed: longer
// than any one reconcile, whose Pods were listed before the event came and
// which may expect that Pod's deletion after it.
const goneWindow = time.Minute

// Option configures an Expectations store.
type Option func(*Expectations)

// WithClock replaces the wall clock, for tests.
func WithClock(c clock.PassiveClock) Option {
	return func(e *Expectations) { e.clock = c }
}

// Expectations is the store of pending creates and deletes for all owners of
// one controller.
type Expectations struct {
	ttl   time.Duration
	clock clock.PassiveClock

	mu     sync.Mutex
	owners map[string]map[string]*pending
	// gone holds the UIDs whose deletion was observed in the last
	// goneWindow, oldest first in goneOrder. A reconcile working from a Pod
	// list read before the deletion event must not expect that deletion
	// again: no event would ever come for it, and the owner would wait for
	// the TTL. UIDs are never reused, so remembering them is safe.
	gone      map[types.UID]struct{}
	goneOrder []goneEntry
}

type goneEntry struct {
	uid types.UID
	at  time.Time
}

// pending is what one (owner, group) still waits for.
type pending struct {
	creations int
	// observedCreations dedupes creation events so a pod reported twice
	// does not consume two expected creations.
	observedCreations sets.Set[types.UID]
	deletions         sets.Set[types.UID]
	raisedAt          time.Time
}

func (p *pending) fulfilled() bool {
	return p.creations <= 0 && p.deletions.Len() == 0
}

// New returns an empty store.
func New(opts ...Option) *Expectations {
	e := &Expectations{
		ttl:    DefaultTTL,
		clock:  clock.RealClock{},
		owners: map[string]map[string]*pending{},
		gone:   map[types.UID]struct{}{},
	}
	for _, opt := range opts {
		opt(e)
	}
	return e
}

// ExpectCreations records that n pods are about to be created for the group.
func (e *Expectations) ExpectCreations(key, group string, n int) {
	if n <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.raise(key, group)
	p.creations += n
}

// CancelCreations gives back n expected creations whose Create call failed or
// was skipped (e.g. after SlowStartBatch stopped early).
func (e *Expectations) CancelCreations(key, group string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.lookup(key, group); p != nil {
		p.creations = max(p.creations-n, 0)
	}
}

// CreationObserved consumes one expected creation for a pod the informer
// delivered. Pods nobody waits for (e.g. the initial list) are ignored.
func (e *Expectations) CreationObserved(key, group string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.lookup(key, group)
	if p == nil || p.creations <= 0 || p.observedCreations.Has(uid) {
		return
	}
	p.observedCreations.Insert(uid)
	p.creations--
}

// ExpectDeletions records that the pods with these UIDs are about to be
// deleted. A UID whose deletion was already observed (the caller's list of
// pods predates the event) is not expected again.
func (e *Expectations) ExpectDeletions(key, group string, uids ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forgetGone()
	var p *pending
	for _, uid := range uids {
		if _, seen := e.gone[uid]; seen {
			continue
		}
		if p == nil {
			p = e.raise(key, group)
		}
		p.deletions.Insert(uid)
	}
}

// DeletionObserved marks the deletion of a pod as seen, and remembers it for
// a while so a later ExpectDeletions from an older list does not wait for
// it. It is also the right call when the Delete request answered NotFound.
func (e *Expectations) DeletionObserved(key, group string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.lookup(key, group); p != nil {
		p.deletions.Delete(uid)
	}
	e.forgetGone()
	if _, seen := e.gone[uid]; !seen {
		e.gone[uid] = struct{}{}
		e.goneOrder = append(e.goneOrder, goneEntry{uid: uid, at: e.clock.Now()})
	}
}

// forgetGone drops the deletions observed more than goneWindow ago.
// Callers hold e.mu.
func (e *Expectations) forgetGone() {
	n := 0
	for n < len(e.goneOrder) && e.clock.Since(e.goneOrder[n].at) > goneWindow {
		delete(e.gone, e.goneOrder[n].uid)
		e.goneOrder[n] = goneEntry{}
		n++
	}
	// The dropped front is freed when append next grows the slice.
	e.goneOrder = e.goneOrder[n:]
}

// CancelDeletions forgets expected deletions whose Delete call failed.
func (e *Expectations) CancelDeletions(key, group string, uids ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.lookup(key, group); p != nil {
		p.deletions.Delete(uids...)
	}
}

// Satisfied reports whether the group may make scale decisions: nothing is
// pending, or what is pending has waited longer than the TTL.
func (e *Expectations) Satisfied(key, group string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.satisfied(key, group)
}

// SatisfiedAll reports whether every group of the owner is Satisfied.
func (e *Expectations) SatisfiedAll(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	all := true
	// Visit every group (no early return) so fulfilled and expired entries
	// are dropped even when another group still blocks.
	for group := range e.owners[key] {
		if !e.satisfied(key, group) {
			all = false
		}
	}
	return all
}

// Pending returns the outstanding creations and deletions of the group, for
// logs and status messages. Expired entries still report their counts.
func (e *Expectations) Pending(key, group string) (creations, deletions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.lookup(key, group); p != nil {
		return p.creations, p.deletions.Len()
	}
	return 0, 0
}

// Delete forgets every group of the owner.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.owners, key)
}

func (e *Expectations) lookup(key, group string) *pending {
	return e.owners[key][group]
}

func (e *Expectations) expired(p *pending) bool {
	return e.clock.Since(p.raisedAt) > e.ttl
}

// raise returns the entry for new expectations and restarts its TTL. An
// expired entry is replaced rather than added to: its leftovers are exactly
// the stale counts the TTL exists to discard.
func (e *Expectations) raise(key, group string) *pending {
	groups := e.owners[key]
	if groups == nil {
		groups = map[string]*pending{}
		e.owners[key] = groups
	}
	p := groups[group]
	if p == nil || e.expired(p) {
		p = &pending{observedCreations: sets.New[types.UID](), deletions: sets.New[types.UID]()}
		groups[group] = p
	}
	p.raisedAt = e.clock.Now()
	return p
}

// satisfied drops entries that no longer block so the store does not grow
// with the number of owners ever reconciled. Callers hold e.mu.
func (e *Expectations) satisfied(key, group string) bool {
	p := e.lookup(key, group)
	if p == nil {
		return true
	}
	if !p.fulfilled() && !e.expired(p) {
		return false
	}
	delete(e.owners[key], group)
	if len(e.owners[key]) == 0 {
		delete(e.owners, key)
	}
	return true
}
