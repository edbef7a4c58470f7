// Package reconcile is the one skeleton every workload's reconciler runs.
// A workload supplies its parts through small interfaces, as Kueue's
// jobframework takes a GenericJob and optional capabilities; the order in
// which they run is written here once:
//
//	get the object (or Forget it) → Skip (another manager's, or not to be
//	touched) → NewScope → Validate (the object alone) → Finalize (add or
//	run finalizers; an object being deleted stops here) → Load (what the
//	steps and the status share, read once) → Steps → Status (the one status
//	write) → Events.Flush → the soonest requeue any phase asked for
//
// Contract:
//   - Validate reads nothing but the object. Its error skips Finalize,
//     Load and the steps, and goes to Status, which shows it.
//   - An object being deleted stops after Finalize, before anything is
//     read for it; a workload without a Finalizer leaves it to the garbage
//     collector, which takes what it owns.
//   - A Load error ends the reconcile, to be retried, with no status write.
//   - Status runs once per reconcile that got past Load (or failed
//     Validate), with the error of Validate or the steps (nil when all went
//     well), so that each family's status is written from one place.
//     Options.ConflictSkipsStatus makes a step's Conflict (a stale cache)
//     return at once instead.
//   - What the phases noted in the scope's events log is recorded after the
//     status write, so no event claims what the status does not show; it
//     is recorded even when a phase failed, since what was done before is
//     news.
//   - An error the workload's UserErrors calls the user's is reported by
//     Status (and its event), not retried with back-off: the watches bring
//     the object back once the user acts.
package reconcile
