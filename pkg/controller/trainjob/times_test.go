package trainjob

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// TestRunTimes: startTime is when the job last started running (its
// creation, or its last resume), kept while it is suspended; completionTime
// is set with the Complete or Failed condition, to its transition time.
func TestRunTimes(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	resumed := created.Add(time.Hour)
	done := created.Add(2 * time.Hour)
	at := func(t time.Time) *metav1.Time { return ptr.To(metav1.NewTime(t)) }
	cond := func(typ string, s metav1.ConditionStatus, t time.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: "R", LastTransitionTime: metav1.NewTime(t)}
	}
	suspended := cond(trainer.TrainJobSuspended, metav1.ConditionTrue, created)
	resumedCond := cond(trainer.TrainJobSuspended, metav1.ConditionFalse, resumed)
	complete := cond(trainer.TrainJobComplete, metav1.ConditionTrue, done)
	failed := cond(trainer.TrainJobFailed, metav1.ConditionTrue, done)
	cases := []struct {
		name           string
		suspend        bool
		old, next      trainer.TrainJobStatus
		wantStart      *metav1.Time
		wantCompletion *metav1.Time
	}{
		{name: "created running: its creation", wantStart: at(created)},
		{name: "created suspended (queued): none", suspend: true,
			next: trainer.TrainJobStatus{Conditions: []metav1.Condition{suspended}}},
		{name: "resumed: the resume", old: trainer.TrainJobStatus{Conditions: []metav1.Condition{suspended}},
			next: trainer.TrainJobStatus{Conditions: []metav1.Condition{resumedCond}}, wantStart: at(resumed)},
		{name: "resumed again: reset to the last resume",
			old:  trainer.TrainJobStatus{StartTime: at(created), Conditions: []metav1.Condition{suspended}},
			next: trainer.TrainJobStatus{StartTime: at(created), Conditions: []metav1.Condition{resumedCond}}, wantStart: at(resumed)},
		{name: "suspended after running: kept", suspend: true,
			old:  trainer.TrainJobStatus{StartTime: at(created)},
			next: trainer.TrainJobStatus{StartTime: at(created), Conditions: []metav1.Condition{suspended}}, wantStart: at(created)},
		{name: "a resume not recorded yet: kept",
			old:  trainer.TrainJobStatus{Conditions: []metav1.Condition{suspended}},
			next: trainer.TrainJobStatus{Conditions: []metav1.Condition{suspended}}},
		{name: "completes", old: trainer.TrainJobStatus{StartTime: at(created)},
			next:      trainer.TrainJobStatus{StartTime: at(created), Conditions: []metav1.Condition{complete}},
			wantStart: at(created), wantCompletion: at(done)},
		{name: "fails", old: trainer.TrainJobStatus{StartTime: at(created)},
			next:      trainer.TrainJobStatus{StartTime: at(created), Conditions: []metav1.Condition{failed}},
			wantStart: at(created), wantCompletion: at(done)},
		{name: "finishes before its start was written", next: trainer.TrainJobStatus{Conditions: []metav1.Condition{complete}},
			wantStart: at(created), wantCompletion: at(done)},
		{name: "finished before this version: nothing filled in",
			old:  trainer.TrainJobStatus{Conditions: []metav1.Condition{complete}},
			next: trainer.TrainJobStatus{Conditions: []metav1.Condition{complete}}},
		{name: "finished: times kept",
			old:       trainer.TrainJobStatus{StartTime: at(created), CompletionTime: at(done), Conditions: []metav1.Condition{complete}},
			next:      trainer.TrainJobStatus{StartTime: at(created), CompletionTime: at(done), Conditions: []metav1.Condition{complete}},
			wantStart: at(created), wantCompletion: at(done)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				Spec:       trainer.TrainJobSpec{Suspend: ptr.To(tc.suspend)},
				Status:     tc.old,
			}
			next := tc.next
			setRunTimes(tj, &next)
			if !equalTime(next.StartTime, tc.wantStart) {
				t.Errorf("startTime = %v, want %v", next.StartTime, tc.wantStart)
			}
			if !equalTime(next.CompletionTime, tc.wantCompletion) {
				t.Errorf("completionTime = %v, want %v", next.CompletionTime, tc.wantCompletion)
			}
		})
	}
}

// TestStartTimeAloneIsNoWrite: a startTime that only appears rides on the
// next status write (the JobSet's first counts), so that it costs no write
// of its own, on creation or after an upgrade; a changed one is written.
func TestStartTimeAloneIsNoWrite(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	if !statusEqual(trainer.TrainJobStatus{}, trainer.TrainJobStatus{StartTime: &t0}) {
		t.Error("a startTime appearing alone is a status change")
	}
	if statusEqual(trainer.TrainJobStatus{StartTime: &t0}, trainer.TrainJobStatus{StartTime: &t1}) {
		t.Error("a startTime reset by a resume is no status change")
	}
	if statusEqual(trainer.TrainJobStatus{}, trainer.TrainJobStatus{CompletionTime: &t0}) {
		t.Error("a completionTime appearing is no status change")
	}
}

func equalTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(b)
}
