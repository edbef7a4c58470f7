package trainjob

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// writeStatus computes the status from the JobSet (nil when there is none)
// and the outcome, and writes it only when it changed in more than
// timestamps. It reports whether a write happened; trainJob is updated to
// what was written.
func (r *Reconciler) writeStatus(ctx context.Context, trainJob *trainer.TrainJob, jobSet *jobsetv1alpha2.JobSet, o outcome) (bool, error) {
	now := metav1.NewTime(r.clock.Now())
	before := trainJob.Status.DeepCopy()
	changed, err := status.Update(ctx, r.client, trainJob, func(next *trainer.TrainJob) error {
		next.Status = desiredStatus(r.runtime, next, jobSet, o, now)
		return nil
	})
	if err != nil {
		return false, err
	}
	if changed {
		r.metrics.ObserveTransition(trainJob.Namespace, before, &trainJob.Status)
	}
	r.metrics.SetState(trainJob, jobSet != nil)
	return changed, nil
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
