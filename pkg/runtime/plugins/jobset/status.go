package jobset

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	fwstatus "github.com/gantry-dev/gantry/pkg/framework/status"
)

// Reasons of a Running=False condition (Gantry). Running is only written
// False after it has been True, so a job that never ran has no Running
// condition at all.
const (
	RunningFalseReasonSuspended = trainer.TrainJobSuspendedReason
	RunningFalseReasonFinished  = "JobsFinished"
	RunningFalseReasonNoActive  = "NoActiveJobs"
)

// TrainJobStatus derives the TrainJob's status from its JobSet. It starts
// from a copy of trainJob.Status and only writes what the JobSet decides:
//
//	JobSet                         TrainJob
//	(exists)                       Created=True  JobsCreationSucceeded (progress)
//	Suspended=True/False           Suspended=True Suspended / False Resumed
//	Completed=True                 Complete=True, reason and message copied
//	Failed=True                    Failed=True, reason and message copied
//	replicatedJobsStatus           jobsStatus, sorted by name
//	some job active, not suspended Running=True JobsRunning (progress)
//	  or finished
//
// Created=True and Running are Gantry's and only written with progress
// (feature gate TrainJobProgressConditions); without it both are removed,
// and a JobSet that exists clears a Created=False left by an earlier
// failed attempt. That is Trainer v2.3's condition set: the Kubeflow SDK
// derives "Running" only from a status without conditions.
//
// jobSet may be nil: before it is created (only the suspend flag of the spec
// is reflected) or after JobSet's TTL deleted it (a finished TrainJob keeps
// its status). Timestamps come from the JobSet's conditions where they exist
// and from now otherwise.
func TrainJobStatus(trainJob *trainer.TrainJob, jobSet *jobsetv1alpha2.JobSet, now metav1.Time, progress bool) trainer.TrainJobStatus {
	status := *trainJob.Status.DeepCopy()
	if jobSet == nil {
		if ptr.Deref(trainJob.Spec.Suspend, false) && !trainer.IsFinished(status.Conditions) {
			fwstatus.SetCondition(&status.Conditions, suspendedCondition(metav1.ConditionTrue, now), now)
		}
		return status
	}

	if progress {
		fwstatus.SetCondition(&status.Conditions, metav1.Condition{
			Type:    trainer.TrainJobCreated,
			Status:  metav1.ConditionTrue,
			Reason:  trainer.TrainJobJobsCreationSucceededReason,
			Message: trainer.TrainJobJobsCreationSucceededMessage,
		}, now)
	} else {
		meta.RemoveStatusCondition(&status.Conditions, trainer.TrainJobCreated)
		meta.RemoveStatusCondition(&status.Conditions, trainer.TrainJobRunning)
	}

	if c := meta.FindStatusCondition(jobSet.Status.Conditions, string(jobsetv1alpha2.JobSetSuspended)); c != nil {
		fwstatus.SetCondition(&status.Conditions, suspendedCondition(c.Status, c.LastTransitionTime), now)
	}
	suspended := meta.IsStatusConditionTrue(status.Conditions, trainer.TrainJobSuspended)

	var completed, failed *metav1.Condition
	if c := meta.FindStatusCondition(jobSet.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)); c != nil && c.Status == metav1.ConditionTrue {
		completed = renamed(c, trainer.TrainJobComplete)
	}
	if c := meta.FindStatusCondition(jobSet.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)); c != nil && c.Status == metav1.ConditionTrue {
		failed = renamed(c, trainer.TrainJobFailed)
	}

	status.JobsStatus = jobsStatus(jobSet.Status.ReplicatedJobsStatus)
	finished := completed != nil || failed != nil || trainer.IsFinished(status.Conditions)
	switch {
	case !progress:
	case !suspended && !finished && anyActive(status.JobsStatus):
		fwstatus.SetCondition(&status.Conditions, metav1.Condition{
			Type:    trainer.TrainJobRunning,
			Status:  metav1.ConditionTrue,
			Reason:  trainer.TrainJobJobsRunningReason,
			Message: "The TrainJob has active jobs",
		}, now)
	case meta.FindStatusCondition(status.Conditions, trainer.TrainJobRunning) != nil:
		reason, message := RunningFalseReasonNoActive, "The TrainJob has no active jobs"
		switch {
		case finished:
			reason, message = RunningFalseReasonFinished, "The TrainJob has finished"
		case suspended:
			reason, message = RunningFalseReasonSuspended, trainer.TrainJobSuspendedMessage
		}
		fwstatus.SetCondition(&status.Conditions, metav1.Condition{
			Type: trainer.TrainJobRunning, Status: metav1.ConditionFalse, Reason: reason, Message: message,
		}, now)
	}

	// Terminal conditions go last so the printed State column, which shows
	// the last condition, ends on them.
	if completed != nil {
		fwstatus.SetCondition(&status.Conditions, *completed, now)
	}
	if failed != nil {
		fwstatus.SetCondition(&status.Conditions, *failed, now)
	}
	return status
}

func suspendedCondition(s metav1.ConditionStatus, at metav1.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               trainer.TrainJobSuspended,
		Status:             s,
		Reason:             trainer.TrainJobSuspendedReason,
		Message:            trainer.TrainJobSuspendedMessage,
		LastTransitionTime: at,
	}
	if s != metav1.ConditionTrue {
		c.Reason, c.Message = trainer.TrainJobResumedReason, trainer.TrainJobResumedMessage
	}
	return c
}

func renamed(c *metav1.Condition, typ string) *metav1.Condition {
	out := c.DeepCopy()
	out.Type = typ
	out.ObservedGeneration = 0
	return out
}

func jobsStatus(in []jobsetv1alpha2.ReplicatedJobStatus) []trainer.JobStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]trainer.JobStatus, 0, len(in))
	for _, s := range in {
		out = append(out, trainer.JobStatus{
			Name:      s.Name,
			Ready:     ptr.To(s.Ready),
			Succeeded: ptr.To(s.Succeeded),
			Failed:    ptr.To(s.Failed),
			Active:    ptr.To(s.Active),
			Suspended: ptr.To(s.Suspended),
		})
	}
	// In the JobSet's order (JobSet v0.12 stores it sorted by name,
	// descending), as Trainer copies it.
	return out
}

func anyActive(jobs []trainer.JobStatus) bool {
	return slices.ContainsFunc(jobs, func(j trainer.JobStatus) bool { return ptr.Deref(j.Active, 0) > 0 })
}
