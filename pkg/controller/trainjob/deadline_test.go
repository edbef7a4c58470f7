package trainjob

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

func TestActiveDeadline(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	resumedAt := func(at time.Time) metav1.Condition {
		return metav1.Condition{Type: trainer.TrainJobSuspended, Status: metav1.ConditionFalse, Reason: trainer.TrainJobResumedReason, LastTransitionTime: metav1.NewTime(at)}
	}
	suspendedCond := metav1.Condition{Type: trainer.TrainJobSuspended, Status: metav1.ConditionTrue, Reason: trainer.TrainJobSuspendedReason, LastTransitionTime: metav1.NewTime(created)}
	cases := []struct {
		name     string
		deadline *int64
		suspend  bool
		conds    []metav1.Condition
		now      time.Time
		want     deadline
	}{
		{name: "no deadline", now: created.Add(time.Hour), want: deadline{}},
		{name: "counts from creation", deadline: ptr.To[int64](60), now: created.Add(20 * time.Second),
			want: deadline{remaining: 40 * time.Second, limit: time.Minute}},
		{name: "exceeded", deadline: ptr.To[int64](60), now: created.Add(61 * time.Second),
			want: deadline{exceeded: true, limit: time.Minute}},
		{name: "exactly at the limit is exceeded", deadline: ptr.To[int64](60), now: created.Add(time.Minute),
			want: deadline{exceeded: true, limit: time.Minute}},
		{name: "suspended jobs do not run down the clock", deadline: ptr.To[int64](60), suspend: true, now: created.Add(time.Hour),
			want: deadline{}},
		{name: "a resume restarts the clock", deadline: ptr.To[int64](60), conds: []metav1.Condition{resumedAt(created.Add(time.Hour))},
			now: created.Add(time.Hour + 50*time.Second), want: deadline{remaining: 10 * time.Second, limit: time.Minute}},
		{name: "a resume not yet recorded gets the full limit", deadline: ptr.To[int64](60), conds: []metav1.Condition{suspendedCond},
			now: created.Add(time.Hour), want: deadline{remaining: time.Minute, limit: time.Minute}},
		{name: "a resume timestamp before creation is ignored", deadline: ptr.To[int64](60), conds: []metav1.Condition{resumedAt(created.Add(-time.Hour))},
			now: created.Add(30 * time.Second), want: deadline{remaining: 30 * time.Second, limit: time.Minute}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				Spec:       trainer.TrainJobSpec{ActiveDeadlineSeconds: tc.deadline, Suspend: ptr.To(tc.suspend)},
				Status:     trainer.TrainJobStatus{Conditions: tc.conds},
			}
			if got := activeDeadline(tj, tc.deadline, tc.now); got != tc.want {
				t.Errorf("activeDeadline() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
