package trainjob

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/runtime"
	jobsetplugin "github.com/gantry-dev/gantry/pkg/runtime/plugins/jobset"
)

// outcome is what this reconcile decided on top of what the JobSet says.
type outcome struct {
	// created replaces the Created condition while no JobSet exists.
	created *metav1.Condition
	// failed is a terminal Failed condition the controller itself decided
	// (missing runtime, deadline).
	failed *metav1.Condition
}

// StatusWindow is how long a change of a TrainJob's jobsStatus alone may
// wait, so that the counts a JobSet moves through in its first seconds
// (its jobs created, active, ready) become one status write
// (status.Coalescer). Conditions are never held.
const StatusWindow = 2 * time.Second

// writeStatus computes the status from the JobSet (nil when there is none)
// and the outcome, and writes it only when it changed in more than
// timestamps. It reports whether a write happened; trainJob is updated to
// what was written. A change of jobsStatus alone is held for StatusWindow:
// held is then how long it may still wait, and the caller must be
// reconciled again by then.
func (r *Reconciler) writeStatus(ctx context.Context, trainJob *trainer.TrainJob, jobSet *jobsetv1alpha2.JobSet, o outcome) (changed bool, held time.Duration, err error) {
	now := metav1.NewTime(r.clock.Now())
	before := trainJob.Status.DeepCopy()
	key := client.ObjectKeyFromObject(trainJob)
	changed, err = status.Update(ctx, r.client, trainJob, func(next *trainer.TrainJob) error {
		// Each attempt (a conflict re-reads) decides anew.
		held = 0
		next.Status = desiredStatus(r.runtime, next, jobSet, o, now)
		return nil
	}, status.WithEqual(func(old, updated *trainer.TrainJob) bool {
		return statusEqual(old.Status, updated.Status)
	}), status.WithHold(func(old, updated *trainer.TrainJob) time.Duration {
		if countersOnly(old.Status, updated.Status) {
			held = r.statusWindow.Hold(key)
		}
		return held
	}))
	if err != nil {
		return false, 0, err
	}
	if held == 0 {
		r.statusWindow.Close(key)
	}
	if changed {
		r.metrics.ObserveTransition(trainJob.Namespace, before, &trainJob.Status)
	}
	r.metrics.SetState(trainJob, jobSet != nil)
	return changed, held, nil
}

// countersOnly reports whether two statuses differ only in jobsStatus, the
// counts of the JobSet's jobs. Kueue reads them (active, for a job it
// suspended; ready and succeeded, for PodsReady), and the Kubeflow SDK
// reads the conditions and the Pods, not them: a wait of seconds costs
// nobody anything, and a write per count the JobSet moves through would.
func countersOnly(old, updated trainer.TrainJobStatus) bool {
	old.JobsStatus, updated.JobsStatus = nil, nil
	return statusEqual(old, updated)
}

// statusEqual compares two statuses as status.StatusEqual does (timestamps
// aside), and takes a job that counts nothing (the JobSet lists it, none of
// its Pods has started) for no job: both read the same to Kueue and to a
// user, and JobSet lists its jobs before it starts them. A startTime that
// only appears is no change either: it is derived, not observed (times.go),
// so it rides on the next write (the JobSet's first counts) at no write of
// its own, for a new job or after an upgrade; a resume that resets it
// changes the Suspended condition, which is written at once.
func statusEqual(a, b trainer.TrainJobStatus) bool {
	a.JobsStatus, b.JobsStatus = counted(a.JobsStatus), counted(b.JobsStatus)
	if a.StartTime == nil || b.StartTime == nil {
		a.StartTime, b.StartTime = nil, nil
	}
	same, err := status.StatusEqual(&trainer.TrainJob{Status: a}, &trainer.TrainJob{Status: b})
	return err == nil && same
}

// counted is jobs without the entries whose counts are all zero; nil when
// none is left.
func counted(jobs []trainer.JobStatus) []trainer.JobStatus {
	out := slices.DeleteFunc(slices.Clone(jobs), func(j trainer.JobStatus) bool {
		return ptr.Deref(j.Active, 0) == 0 && ptr.Deref(j.Ready, 0) == 0 && ptr.Deref(j.Succeeded, 0) == 0 &&
			ptr.Deref(j.Failed, 0) == 0 && ptr.Deref(j.Suspended, 0) == 0
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// desiredStatus is the TrainJob's status for this reconcile. The JobSet
// mapping (Created, Suspended, Complete, Failed, Running, jobsStatus) is the
// runtime's; the controller adds its own outcome and the suspend flag of the
// TrainJob spec, which leads the JobSet's lagging Suspended condition.
func desiredStatus(rt *runtime.Runtime, trainJob *trainer.TrainJob, jobSet *jobsetv1alpha2.JobSet, o outcome, now metav1.Time) trainer.TrainJobStatus {
	st := rt.Status(trainJob, jobSet, now)
	switch {
	case o.created == nil || jobSet != nil:
	case o.created.Status == metav1.ConditionTrue && !rt.ProgressConditions():
		// Trainer's condition set has no Created=True; a Created=False of an
		// earlier attempt goes.
		meta.RemoveStatusCondition(&st.Conditions, trainer.TrainJobCreated)
	default:
		status.SetCondition(&st.Conditions, *o.created, now)
	}
	reflectSuspend(&st, trainJob, jobSet, now)
	if o.failed != nil && !trainer.IsFinished(st.Conditions) {
		stopRunning(&st.Conditions, now)
		status.SetCondition(&st.Conditions, *o.failed, now)
	}
	setRunTimes(trainJob, &st)
	return st
}

// stopRunning turns a Running=True condition False once the job finished.
func stopRunning(conds *[]metav1.Condition, now metav1.Time) {
	if !meta.IsStatusConditionTrue(*conds, trainer.TrainJobRunning) {
		return
	}
	status.SetCondition(conds, metav1.Condition{
		Type:    trainer.TrainJobRunning,
		Status:  metav1.ConditionFalse,
		Reason:  jobsetplugin.RunningFalseReasonFinished,
		Message: "The TrainJob has finished",
	}, now)
}

func deadlineExceeded(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, trainer.TrainJobFailed)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == trainer.TrainJobDeadlineExceededReason
}
