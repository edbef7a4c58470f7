package trainjob

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime"
	jobsetplugin "github.com/gantry-dev/gantry/pkg/runtime/plugins/jobset"
)

// TestDesiredStatus: with the TrainJobProgressConditions feature gate, the
// controller's outcome and the JobSet's conditions merge into Gantry's
// Created and Running conditions as well as Trainer's.
func TestDesiredStatus(t *testing.T) {
	rt, err := runtime.New(runtime.Options{Existing: fake.NewClientBuilder().Build(), ProgressConditions: true})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	c := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
	}
	created := runtime.CreatedCondition(nil)
	notFound := runtime.CreatedCondition(&runtime.RuntimeNotFoundError{Kind: trainer.ClusterTrainingRuntimeKind, Name: "x"})
	failedNotFound := metav1.Condition{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue, Reason: trainer.TrainJobRuntimeNotFoundReason}
	deadlineFailed := metav1.Condition{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue, Reason: trainer.TrainJobDeadlineExceededReason}
	jobSet := func(suspend bool, conds ...metav1.Condition) *jobsetv1alpha2.JobSet {
		return &jobsetv1alpha2.JobSet{Spec: jobsetv1alpha2.JobSetSpec{Suspend: ptr.To(suspend)}, Status: jobsetv1alpha2.JobSetStatus{Conditions: conds}}
	}
	jsSuspended := metav1.Condition{Type: string(jobsetv1alpha2.JobSetSuspended), Status: metav1.ConditionTrue, Reason: "SuspendedJobs"}
	running := c(trainer.TrainJobRunning, metav1.ConditionTrue, trainer.TrainJobJobsRunningReason)

	cases := []struct {
		name    string
		suspend bool
		before  []metav1.Condition
		jobSet  *jobsetv1alpha2.JobSet
		outcome outcome
		want    []metav1.Condition
	}{
		{
			name:    "JobSet just applied",
			jobSet:  jobSet(false),
			outcome: outcome{created: &created},
			want:    []metav1.Condition{c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason)},
		},
		{
			name:    "missing runtime: Created=False then a terminal Failed, last",
			outcome: outcome{created: &notFound, failed: &failedNotFound},
			want: []metav1.Condition{
				c(trainer.TrainJobCreated, metav1.ConditionFalse, trainer.TrainJobRuntimeNotFoundReason),
				failedNotFound,
			},
		},
		{
			name:    "a Created outcome never overrides an existing JobSet",
			jobSet:  jobSet(false),
			outcome: outcome{created: &notFound},
			want:    []metav1.Condition{c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason)},
		},
		{
			name:    "suspending a running job stops Running at once",
			suspend: true,
			before:  []metav1.Condition{c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason), running},
			jobSet:  jobSet(true),
			want: []metav1.Condition{
				c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason),
				c(trainer.TrainJobRunning, metav1.ConditionFalse, jobsetplugin.RunningFalseReasonSuspended),
				c(trainer.TrainJobSuspended, metav1.ConditionTrue, trainer.TrainJobSuspendedReason),
			},
		},
		{
			name:   "resumed in the spec but the JobSet is still suspended: still Suspended",
			before: []metav1.Condition{c(trainer.TrainJobSuspended, metav1.ConditionTrue, trainer.TrainJobSuspendedReason)},
			jobSet: jobSet(true, jsSuspended),
			want: []metav1.Condition{
				c(trainer.TrainJobSuspended, metav1.ConditionTrue, trainer.TrainJobSuspendedReason),
				c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason),
			},
		},
		{
			name:   "resumed JobSet whose controller has not caught up: Resumed",
			before: []metav1.Condition{c(trainer.TrainJobSuspended, metav1.ConditionTrue, trainer.TrainJobSuspendedReason)},
			jobSet: jobSet(false, jsSuspended),
			want: []metav1.Condition{
				c(trainer.TrainJobSuspended, metav1.ConditionFalse, trainer.TrainJobResumedReason),
				c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason),
			},
		},
		{
			name:    "never suspended: no Suspended condition",
			jobSet:  jobSet(false),
			outcome: outcome{created: &created},
			want:    []metav1.Condition{c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason)},
		},
		{
			name:    "deadline: Running turns False and Failed comes last",
			before:  []metav1.Condition{c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason), running},
			outcome: outcome{failed: &deadlineFailed},
			want: []metav1.Condition{
				c(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason),
				c(trainer.TrainJobRunning, metav1.ConditionFalse, jobsetplugin.RunningFalseReasonFinished),
				deadlineFailed,
			},
		},
		{
			name:    "a finished job is not suspended afterwards",
			suspend: true,
			before:  []metav1.Condition{c(trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted")},
			want:    []metav1.Condition{c(trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainer.TrainJob{
				Spec:   trainer.TrainJobSpec{Suspend: ptr.To(tc.suspend)},
				Status: trainer.TrainJobStatus{Conditions: tc.before},
			}
			got := desiredStatus(rt, tj, tc.jobSet, tc.outcome, now)
			opts := cmpopts.IgnoreFields(metav1.Condition{}, "Message", "LastTransitionTime", "ObservedGeneration")
			if diff := cmp.Diff(tc.want, got.Conditions, opts); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for _, cond := range got.Conditions {
				if cond.LastTransitionTime.IsZero() {
					t.Errorf("condition %s has no lastTransitionTime", cond.Type)
				}
			}
			if len(tc.before) > 0 && tj.Status.Conditions[0].Type != tc.before[0].Type {
				t.Error("desiredStatus modified the TrainJob")
			}
		})
	}
}

// TestDesiredStatusDefault: without the feature gate a successful build adds
// no Created condition and clears the Created=False of an earlier attempt,
// while a failed build still says why (the job cannot be running then, so
// the Kubeflow SDK's reading is not at stake).
func TestDesiredStatusDefault(t *testing.T) {
	rt, err := runtime.New(runtime.Options{Existing: fake.NewClientBuilder().Build()})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	created := runtime.CreatedCondition(nil)
	creationFailed := runtime.CreatedCondition(errors.New("quota exceeded"))
	for _, tc := range []struct {
		name    string
		before  []metav1.Condition
		outcome outcome
		want    []string
	}{
		{name: "built", outcome: outcome{created: &created}},
		{name: "built after a failed attempt", before: []metav1.Condition{creationFailed}, outcome: outcome{created: &created}},
		{name: "creation failed", outcome: outcome{created: &creationFailed}, want: []string{trainer.TrainJobCreated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainer.TrainJob{Status: trainer.TrainJobStatus{Conditions: tc.before}}
			var got []string
			for _, c := range desiredStatus(rt, tj, nil, tc.outcome, now).Conditions {
				got = append(got, c.Type)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("condition types (-want +got):\n%s", diff)
			}
		})
	}
}
