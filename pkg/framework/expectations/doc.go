// Package expectations remembers the pod creates and deletes a controller has
// issued but not yet seen through its informer, so a reconcile that runs on a
// stale cache does not create or delete the same pods twice.
//
// Contract:
//   - Entries are keyed by owner key (the owner's "namespace/name") and group
//     (the head, a worker group, a NodeSet, ...).
//   - Creations are counted: call ExpectCreations before issuing the Create
//     calls (the UID of a new pod is only known after Create returns, and the
//     informer may deliver the pod before that). Each distinct UID reported by
//     CreationObserved consumes one expected creation; a UID seen twice counts
//     once. Creates that failed or were never attempted are given back with
//     CancelCreations.
//   - Deletions are tracked by UID: ExpectDeletions before the Delete calls,
//     DeletionObserved from the informer, CancelDeletions when a Delete call
//     failed (a NotFound answer means the pod is gone; report it observed).
//   - Satisfied is true when nothing is pending or the expectation is older
//     than the TTL (default 5 minutes): a lost event must not block an owner
//     forever. Every raise restarts the TTL.
//   - Delete forgets an owner, e.g. when the owner itself is NotFound.
//
// All methods are safe for concurrent use.
package expectations
