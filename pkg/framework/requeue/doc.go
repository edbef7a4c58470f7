// Package requeue collects "reconcile me again after d" requests from the
// steps of one reconcile and turns them into a single ctrl.Result.
//
// Contract: the soonest positive request wins; non-positive requests are
// ignored (an immediate retry is what returning an error is for). A Requeue
// is created per reconcile, never shared through a package variable, and is
// safe for concurrent use because steps may run inside slowstart batches.
package requeue
