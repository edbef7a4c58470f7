package trainjob

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// deadline is where a TrainJob stands against spec.activeDeadlineSeconds.
type deadline struct {
	// exceeded is true once the running time passed the limit.
	exceeded bool
	// remaining is the time left; zero when no deadline applies.
	remaining time.Duration
	// limit is the active deadline as a duration.
	limit time.Duration
}

// activeDeadline measures the running time from the later of the
// TrainJob's creation and its last resume, like a batch Job: time spent
// suspended does not count, and a resume starts the clock afresh. seconds
// is the job's activeDeadlineSeconds, or its runtime's default
// (resolveRunPolicy); nil means no deadline.
func activeDeadline(trainJob *trainer.TrainJob, seconds *int64, now time.Time) deadline {
	if seconds == nil || isSuspended(trainJob) {
		return deadline{}
	}
	limit := time.Duration(*seconds) * time.Second
	start := trainJob.CreationTimestamp.Time
	if c := meta.FindStatusCondition(trainJob.Status.Conditions, trainer.TrainJobSuspended); c != nil {
		if c.Status == metav1.ConditionTrue {
			// Resumed in the spec but the resume is not recorded yet: this
			// reconcile records it, and the clock starts now.
			return deadline{remaining: limit, limit: limit}
		}
		if c.LastTransitionTime.After(start) {
			start = c.LastTransitionTime.Time
		}
	}
	remaining := start.Add(limit).Sub(now)
	if remaining <= 0 {
		return deadline{exceeded: true, limit: limit}
	}
	return deadline{remaining: remaining, limit: limit}
}

// enforceDeadline measures a running job against its active deadline.
// Past it, the JobSet is deleted (stopping its pods) and Status marks the
// TrainJob Failed/DeadlineExceeded. The delete goes first: a finished
// TrainJob is never built again, so a Failed status written before a
// failed delete would leave the pods running. Before it, the job is
// reconciled again when it ends.
func (r *Reconciler) enforceDeadline(ctx context.Context, s *scope) error {
	s.deadline = activeDeadline(s.Object, r.activeRunPolicy(ctx, s).activeDeadlineSeconds, r.clock.Now())
	if !s.deadline.exceeded {
		s.Requeue.After(s.deadline.remaining)
		return nil
	}
	if s.jobSet != nil {
		if err := r.deleteJobSet(ctx, s.jobSet); err != nil {
			s.noStatus = true
			return err
		}
	}
	return nil
}

// failDeadlineExceeded marks the TrainJob Failed/DeadlineExceeded, its
// JobSet deleted.
func (r *Reconciler) failDeadlineExceeded(ctx context.Context, trainJob *trainer.TrainJob, dl deadline) error {
	failed := metav1.Condition{
		Type:    trainer.TrainJobFailed,
		Status:  metav1.ConditionTrue,
		Reason:  trainer.TrainJobDeadlineExceededReason,
		Message: trainer.TrainJobDeadlineExceededMessage,
	}
	// Failed is a condition, which is never held.
	changed, _, err := r.writeStatus(ctx, trainJob, nil, outcome{failed: &failed})
	if err != nil {
		return err
	}
	if changed {
		r.recorder.Warning(trainJob, trainer.TrainJobDeadlineExceededReason, "%s of %s", trainer.TrainJobDeadlineExceededMessage, dl.limit)
	}
	return nil
}

func (r *Reconciler) deleteJobSet(ctx context.Context, jobSet *jobsetv1alpha2.JobSet) error {
	if !jobSet.DeletionTimestamp.IsZero() {
		return nil
	}
	// Background: the JobSet goes at once and the garbage collector removes
	// its Jobs and pods; foreground would keep it around with a finalizer.
	err := r.client.Delete(ctx, jobSet, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &jobSet.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting JobSet %s: %w", client.ObjectKeyFromObject(jobSet), err)
	}
	return nil
}
