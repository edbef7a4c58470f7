// Package syncsteps runs the ordered, named steps of a reconcile over a
// per-reconcile scope, in the way Cluster API's machineset doReconcile runs
// its phase functions.
//
// The scope is what one reconcile knows: the object, what the steps have
// read or built so far, the soonest requeue they asked for and the events
// they noted. Each workload family declares its scope as a struct that
// embeds Base, and its steps as functions (usually Reconciler methods) of
// that scope, so every reconciler reads the same way:
//
//	get the object → scope → Run(steps) → status write → Events.Flush → Result
//
// Contract: steps run in order; a step whose Skip says so does not run.
// When a step fails, a Warning event with reason SyncStepFailed (or the
// step's FailureReason) and note "step <name>: <error>" is recorded on the
// object, and the chain stops if the step is marked StopOnError, otherwise
// it continues with the next step. Run returns the errors of all failed
// steps, each wrapped as "step <name>: <error>" and joined with errors.Join,
// so errors.Is/As see every cause. Optimistic-concurrency conflicts are
// returned but not recorded as events: they are routine, retried at once,
// and every event is an API write. A step that ReportsOwnFailure is neither
// recorded nor wrapped. Requeue requests of all steps merge into
// the soonest one (requeue.Requeue).
package syncsteps
