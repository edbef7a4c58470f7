package jobset

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

var (
	now     = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	earlier = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
)

func cond(typ string, s metav1.ConditionStatus, reason, msg string, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: at}
}

func created() metav1.Condition {
	return cond(trainer.TrainJobCreated, metav1.ConditionTrue, trainer.TrainJobJobsCreationSucceededReason, trainer.TrainJobJobsCreationSucceededMessage, now)
}

func running(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return cond(trainer.TrainJobRunning, s, reason, msg, now)
}

func jobSet(conds []metav1.Condition, active ...int32) *jobsetv1alpha2.JobSet {
	js := &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{Conditions: conds}}
	names := []string{"node", "dataset-initializer"}
	for i, a := range active {
		js.Status.ReplicatedJobsStatus = append(js.Status.ReplicatedJobsStatus,
			jobsetv1alpha2.ReplicatedJobStatus{Name: names[i], Active: a, Ready: a, Succeeded: 1})
	}
	return js
}

// TestTrainJobStatusWithProgressConditions: with the feature gate,
// Gantry's Created and Running conditions are written too.
func TestTrainJobStatusWithProgressConditions(t *testing.T) {
	jsCompleted := cond(string(jobsetv1alpha2.JobSetCompleted), metav1.ConditionTrue, "AllJobsCompleted", "jobset completed successfully", earlier)
	jsFailed := cond(string(jobsetv1alpha2.JobSetFailed), metav1.ConditionTrue, "FailedJobs", "jobset failed due to one or more job failures", earlier)
	jsSuspended := cond(string(jobsetv1alpha2.JobSetSuspended), metav1.ConditionTrue, "SuspendedJobs", "jobset is suspended", earlier)
	jsResumed := cond(string(jobsetv1alpha2.JobSetSuspended), metav1.ConditionFalse, "ResumeJobs", "jobset is resumed", earlier)
	wasRunning := running(metav1.ConditionTrue, trainer.TrainJobJobsRunningReason, "The TrainJob has active jobs")

	cases := map[string]struct {
		job       *trainer.TrainJob
		jobSet    *jobsetv1alpha2.JobSet
		wantConds []metav1.Condition
		wantJobs  []string
	}{
		"no JobSet yet": {job: trainertesting.MakeTrainJob("a", "default").Obj()},
		"no JobSet yet, suspended": {
			job:       trainertesting.MakeTrainJob("a", "default").Suspend(true).Obj(),
			wantConds: []metav1.Condition{cond(trainer.TrainJobSuspended, metav1.ConditionTrue, "Suspended", "TrainJob is suspended", now)},
		},
		"JobSet deleted by TTL after completion keeps status": {
			job:       trainertesting.MakeTrainJob("a", "default").Condition(cond(trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted", "done", earlier)).Obj(),
			wantConds: []metav1.Condition{cond(trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted", "done", earlier)},
		},
		"created, pods pending": {
			job: trainertesting.MakeTrainJob("a", "default").Obj(), jobSet: jobSet(nil, 0),
			wantConds: []metav1.Condition{created()}, wantJobs: []string{"node"},
		},
		"running": {
			job: trainertesting.MakeTrainJob("a", "default").Obj(), jobSet: jobSet(nil, 2, 0),
			wantConds: []metav1.Condition{created(), wasRunning}, wantJobs: []string{"node", "dataset-initializer"},
		},
		"suspended while running": {
			job: trainertesting.MakeTrainJob("a", "default").Condition(created()).Condition(wasRunning).Obj(), jobSet: jobSet([]metav1.Condition{jsSuspended}, 0),
			wantConds: []metav1.Condition{created(), running(metav1.ConditionFalse, RunningFalseReasonSuspended, trainer.TrainJobSuspendedMessage),
				cond(trainer.TrainJobSuspended, metav1.ConditionTrue, "Suspended", "TrainJob is suspended", earlier)},
			wantJobs: []string{"node"},
		},
		"resumed": {
			job:    trainertesting.MakeTrainJob("a", "default").Condition(created()).Condition(cond(trainer.TrainJobSuspended, metav1.ConditionTrue, "Suspended", "TrainJob is suspended", earlier)).Obj(),
			jobSet: jobSet([]metav1.Condition{jsResumed}, 1),
			wantConds: []metav1.Condition{created(), cond(trainer.TrainJobSuspended, metav1.ConditionFalse, "Resumed", "TrainJob is resumed", earlier),
				wasRunning},
			wantJobs: []string{"node"},
		},
		"completed: reason and message copied, Running turned off": {
			job: trainertesting.MakeTrainJob("a", "default").Condition(created()).Condition(wasRunning).Obj(), jobSet: jobSet([]metav1.Condition{jsCompleted}, 0),
			wantConds: []metav1.Condition{created(), running(metav1.ConditionFalse, RunningFalseReasonFinished, "The TrainJob has finished"),
				cond(trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted", "jobset completed successfully", earlier)},
			wantJobs: []string{"node"},
		},
		"failed with active pods still terminating is not running": {
			job: trainertesting.MakeTrainJob("a", "default").Obj(), jobSet: jobSet([]metav1.Condition{jsFailed}, 1),
			wantConds: []metav1.Condition{created(), cond(trainer.TrainJobFailed, metav1.ConditionTrue, "FailedJobs", "jobset failed due to one or more job failures", earlier)},
			wantJobs:  []string{"node"},
		},
		"jobs stopped without finishing": {
			job: trainertesting.MakeTrainJob("a", "default").Condition(created()).Condition(wasRunning).Obj(), jobSet: jobSet(nil, 0),
			wantConds: []metav1.Condition{created(), running(metav1.ConditionFalse, RunningFalseReasonNoActive, "The TrainJob has no active jobs")},
			wantJobs:  []string{"node"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.job.DeepCopy()
			got := TrainJobStatus(tc.job, tc.jobSet, now, true)
			if diff := cmp.Diff(tc.wantConds, got.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			var gotJobs []string
			for _, j := range got.JobsStatus {
				gotJobs = append(gotJobs, j.Name)
			}
			if diff := cmp.Diff(tc.wantJobs, gotJobs); diff != "" {
				t.Errorf("jobsStatus names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.job); diff != "" {
				t.Errorf("TrainJob modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestJobsStatusCopiesCounts(t *testing.T) {
	js := &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{ReplicatedJobsStatus: []jobsetv1alpha2.ReplicatedJobStatus{
		{Name: "node", Ready: 1, Succeeded: 2, Failed: 3, Active: 4, Suspended: 5},
	}}}
	got := TrainJobStatus(trainertesting.MakeTrainJob("a", "default").Obj(), js, now, false).JobsStatus
	want := []trainer.JobStatus{{Name: "node", Ready: ptr.To[int32](1), Succeeded: ptr.To[int32](2), Failed: ptr.To[int32](3),
		Active: ptr.To[int32](4), Suspended: ptr.To[int32](5)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jobsStatus (-want +got):\n%s", diff)
	}
}

// status.jobsStatus keeps the JobSet's order, as Trainer copies it: JobSet
// v0.12 stores its replicated jobs' statuses sorted by name, descending
// (node, model-initializer, dataset-initializer), and a reader that takes
// jobsStatus[0] gets the same job on both.
func TestJobsStatusKeepsTheJobSetsOrder(t *testing.T) {
	js := &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{ReplicatedJobsStatus: []jobsetv1alpha2.ReplicatedJobStatus{
		{Name: "node"}, {Name: "model-initializer"}, {Name: "dataset-initializer"},
	}}}
	got := TrainJobStatus(trainertesting.MakeTrainJob("a", "default").Obj(), js, now, false).JobsStatus
	var names []string
	for _, j := range got {
		names = append(names, j.Name)
	}
	if want := []string{"node", "model-initializer", "dataset-initializer"}; !slices.Equal(names, want) {
		t.Errorf("jobsStatus names %v, want the JobSet's order %v", names, want)
	}
}

// sdkStatus is how the Kubeflow SDK (kubeflow/sdk, the Kubernetes backend's
// __get_trainjob_from_cr) names a TrainJob's status: Complete or Failed
// from a True condition of that type; otherwise Running only when the
// status has no condition at all and every training node runs; else
// Created.
func sdkStatus(st trainer.TrainJobStatus, nodesRunning bool) string {
	if len(st.Conditions) > 0 {
		out := "Created"
		for _, c := range st.Conditions {
			if (c.Type == trainer.TrainJobComplete || c.Type == trainer.TrainJobFailed) && c.Status == metav1.ConditionTrue {
				out = c.Type
			}
		}
		return out
	}
	if nodesRunning {
		return "Running"
	}
	return "Created"
}

// TestTrainJobStatus: by default the status has Trainer v2.3's condition
// set, so the Kubeflow SDK sees a running job as Running (it would not
// with a Created or Running condition present), and conditions Gantry
// wrote before (an earlier failed attempt's Created=False, or both
// conditions from a manager that had the feature gate on) are removed.
func TestTrainJobStatus(t *testing.T) {
	jsCompleted := cond(string(jobsetv1alpha2.JobSetCompleted), metav1.ConditionTrue, "AllJobsCompleted", "jobset completed successfully", earlier)
	wasRunning := running(metav1.ConditionTrue, trainer.TrainJobJobsRunningReason, "The TrainJob has active jobs")
	createFailed := cond(trainer.TrainJobCreated, metav1.ConditionFalse, trainer.TrainJobJobsCreationFailedReason, "Failed to create Jobs: quota", earlier)

	cases := map[string]struct {
		job       *trainer.TrainJob
		jobSet    *jobsetv1alpha2.JobSet
		wantConds []metav1.Condition
		wantSDK   string
	}{
		"created, pods pending": {
			job: trainertesting.MakeTrainJob("a", "default").Obj(), jobSet: jobSet(nil, 0), wantSDK: "Created",
		},
		"running": {
			job: trainertesting.MakeTrainJob("a", "default").Obj(), jobSet: jobSet(nil, 2), wantSDK: "Running",
		},
		"running after a failed first attempt": {
			job: trainertesting.MakeTrainJob("a", "default").Condition(createFailed).Obj(), jobSet: jobSet(nil, 2), wantSDK: "Running",
		},
		"running, conditions of a manager with the gate on": {
			job: trainertesting.MakeTrainJob("a", "default").Condition(created()).Condition(wasRunning).Obj(), jobSet: jobSet(nil, 2), wantSDK: "Running",
		},
		"completed": {
			job: trainertesting.MakeTrainJob("a", "default").Obj(), jobSet: jobSet([]metav1.Condition{jsCompleted}, 0),
			wantConds: []metav1.Condition{cond(trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted", "jobset completed successfully", earlier)},
			wantSDK:   "Complete",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := TrainJobStatus(tc.job, tc.jobSet, now, false)
			if diff := cmp.Diff(tc.wantConds, got.Conditions, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			active := false
			for _, j := range got.JobsStatus {
				active = active || ptr.Deref(j.Active, 0) > 0
			}
			if s := sdkStatus(got, active); s != tc.wantSDK {
				t.Errorf("the Kubeflow SDK would report %s, want %s", s, tc.wantSDK)
			}
		})
	}
}
