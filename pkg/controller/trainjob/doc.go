// Package trainjob is the TrainJob controller: it renders a TrainJob and the
// runtime it references onto a JobSet (plus the MPI Secret and hostfile, and
// a PodGroup for gang scheduling) with pkg/runtime, applies them server-side
// as field manager "trainer", and mirrors the JobSet's state back onto the
// TrainJob's conditions, the way Kubeflow Trainer v2 does.
//
// Beyond upstream: failures before a JobSet exists are conditions, not only
// events; Created=True and Running conditions behind the
// TrainJobProgressConditions feature gate; and a reconcile that changes
// nothing sends no API write at all. activeDeadlineSeconds is enforced as in
// Trainer v2.3: counted from creation or the last resume, then Failed with
// reason DeadlineExceeded and the JobSet deleted. Beyond Trainer v2.3,
// following KEP-2899: ttlSecondsAfterFinished deletes a finished TrainJob,
// a runtime's runPolicy gives both limits their defaults (runpolicy.go,
// ttl.go), and status.startTime and completionTime are set (times.go).
package trainjob
