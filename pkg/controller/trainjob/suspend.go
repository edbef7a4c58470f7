package trainjob

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	jobsetplugin "github.com/gantry-dev/gantry/pkg/runtime/plugins/jobset"
)

// Suspension flows from the TrainJob to the JobSet: the rendered JobSet
// carries spec.suspend (the runtime re-renders a suspended or resuming
// JobSet, see the JobSet plugin's Build), and a JobSet suspended by anyone
// else is taken back by the forced apply. The other way, the JobSet's
// Suspended condition is copied by the runtime's status mapping; it lags
// behind the spec by one JobSet reconcile, so the TrainJob's own flag decides
// here and the condition flips as soon as the user asks.

// isSuspended reports whether the TrainJob asks to be suspended.
func isSuspended(trainJob *trainer.TrainJob) bool {
	return ptr.Deref(trainJob.Spec.Suspend, false)
}

// reflectSuspend sets Suspended=True/Suspended while the TrainJob is
// suspended, and Suspended=False/Resumed once it was suspended and the JobSet
// no longer is. A job that was never suspended gets no Suspended condition,
// and a finished job's conditions are left as they are.
func reflectSuspend(st *trainer.TrainJobStatus, trainJob *trainer.TrainJob, jobSet *jobsetv1alpha2.JobSet, now metav1.Time) {
	if trainer.IsFinished(st.Conditions) {
		return
	}
	if isSuspended(trainJob) {
		status.SetCondition(&st.Conditions, metav1.Condition{
			Type:    trainer.TrainJobSuspended,
			Status:  metav1.ConditionTrue,
			Reason:  trainer.TrainJobSuspendedReason,
			Message: trainer.TrainJobSuspendedMessage,
		}, now)
		// Whatever the JobSet's counters say, suspension is why it is not running.
		if meta.FindStatusCondition(st.Conditions, trainer.TrainJobRunning) != nil {
			status.SetCondition(&st.Conditions, metav1.Condition{
				Type:    trainer.TrainJobRunning,
				Status:  metav1.ConditionFalse,
				Reason:  jobsetplugin.RunningFalseReasonSuspended,
				Message: trainer.TrainJobSuspendedMessage,
			}, now)
		}
		return
	}
	if !meta.IsStatusConditionTrue(st.Conditions, trainer.TrainJobSuspended) {
		return
	}
	if jobSet != nil && ptr.Deref(jobSet.Spec.Suspend, false) {
		// The resume has not reached the JobSet yet (apply failed or pending).
		return
	}
	status.SetCondition(&st.Conditions, metav1.Condition{
		Type:    trainer.TrainJobSuspended,
		Status:  metav1.ConditionFalse,
		Reason:  trainer.TrainJobResumedReason,
		Message: trainer.TrainJobResumedMessage,
	}, now)
}
