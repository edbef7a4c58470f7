package trainjob

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// status.startTime and status.completionTime (Gantry's, beyond Trainer
// v2.3, following KEP-2899). JobSet v0.12.0's status has neither, so they
// are derived here rather than mirrored, with a Job's meaning: startTime
// is when the job last started running (its creation, or its last resume),
// unset while a job created suspended waits, kept while a job that ran is
// suspended; completionTime is when Complete or Failed turned true.
//
// Both are worked out from what the status already holds (the creation
// timestamp, the Suspended and terminal conditions' transition times), not
// from the clock of the reconcile that writes them, so they are the same
// whichever reconcile writes them, before or after a restart. That is what
// lets a startTime that is the only change wait for the next status write
// (statusEqual) instead of costing a write of its own.

// setRunTimes sets st's times; trainJob.Status is the status before this
// reconcile, st the one it is about to write.
func setRunTimes(trainJob *trainer.TrainJob, st *trainer.TrainJobStatus) {
	if trainer.IsFinished(trainJob.Status.Conditions) {
		// Finished before: its times are final, and a job that finished
		// before Gantry kept them is not given any after the fact.
		return
	}
	if start, ok := runStart(trainJob, st.Conditions); ok {
		st.StartTime = &start
	}
	if trainer.IsFinished(st.Conditions) {
		if done := finishTime(st); !done.IsZero() {
			at := metav1.NewTime(done).Rfc3339Copy()
			st.CompletionTime = &at
		}
	}
}

// runStart is when the job last started running: the later of its creation
// and its last recorded resume. false while it is suspended (or a resume is
// not recorded yet): then the start is whatever it was.
func runStart(trainJob *trainer.TrainJob, conds []metav1.Condition) (metav1.Time, bool) {
	start := trainJob.CreationTimestamp.Time
	if c := meta.FindStatusCondition(conds, trainer.TrainJobSuspended); c != nil {
		if c.Status == metav1.ConditionTrue {
			return metav1.Time{}, false
		}
		if c.LastTransitionTime.After(start) {
			start = c.LastTransitionTime.Time
		}
	}
	if start.IsZero() {
		return metav1.Time{}, false
	}
	// Seconds, as the API keeps them: the value read back compares equal.
	return metav1.NewTime(start.Truncate(time.Second)), true
}
