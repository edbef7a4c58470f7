package trainjob

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// ReasonTTLExpired is the Normal event recorded on a TrainJob just before
// its ttlSecondsAfterFinished deletes it. Neither Kubernetes' TTL-after-
// finished controller nor JobSet's TTL records an event, so the reason is
// Gantry's own.
const ReasonTTLExpired = "TTLExpired"

// turnedFinished passes the status write that finishes a TrainJob, which
// the spec-change filter drops: the reconcile it causes is the finished
// job's first, which starts its TTL (a requeue for when it passes, or the
// delete at once for a TTL of zero). It writes nothing when no TTL applies.
var turnedFinished = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*trainer.TrainJob)
		updated, okNew := e.ObjectNew.(*trainer.TrainJob)
		return okOld && okNew && !trainer.IsFinished(old.Status.Conditions) && trainer.IsFinished(updated.Status.Conditions)
	},
}

// ttlState is where a finished TrainJob stands against its
// ttlSecondsAfterFinished; the zero value means no TTL applies.
type ttlState struct {
	// expired: the TTL has passed, the job is to be deleted.
	expired bool
	// remaining is the time left while it has not.
	remaining time.Duration
	// limit is the TTL as a duration.
	limit time.Duration
	// finishedAt is when the job finished.
	finishedAt time.Time
}

// ttlAfterFinished counts the TTL from the time the job's Complete or
// Failed condition turned true, as Kubernetes' TTL-after-finished
// controller and JobSet do: the time is in the status, so a manager that
// restarts works out the same expiry, and one that was down past it
// deletes at once. A job that has not finished (running, or suspended and
// queued by Kueue) has no TTL running.
func ttlAfterFinished(trainJob *trainer.TrainJob, seconds *int32, now time.Time) ttlState {
	if seconds == nil || !trainer.IsFinished(trainJob.Status.Conditions) {
		return ttlState{}
	}
	finishedAt := finishTime(&trainJob.Status)
	if finishedAt.IsZero() {
		// Nothing to count from (a status written by hand); the job is kept.
		return ttlState{}
	}
	limit := time.Duration(*seconds) * time.Second
	remaining := finishedAt.Add(limit).Sub(now)
	if remaining <= 0 {
		return ttlState{expired: true, limit: limit, finishedAt: finishedAt}
	}
	return ttlState{remaining: remaining, limit: limit, finishedAt: finishedAt}
}

// finishTime is the transition time of the true Complete or Failed
// condition, or else status.completionTime; zero when there is neither.
func finishTime(st *trainer.TrainJobStatus) time.Time {
	for _, typ := range []string{trainer.TrainJobComplete, trainer.TrainJobFailed} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if st.CompletionTime != nil {
		return st.CompletionTime.Time
	}
	return time.Time{}
}

// deleteExpired deletes a TrainJob whose TTL has passed. The delete is
// foreground, as Kubernetes' and JobSet's TTL deletes are: the TrainJob
// stays, marked for deletion, until the garbage collector has removed its
// JobSet and pods, so it never disappears while its pods still run. The
// preconditions make the delete apply only to the object the decision was
// made on: a TTL lengthened (or a job recreated under the same name) since
// the cache was filled makes it fail with a conflict, and the next
// reconcile decides again on the newer object.
func (r *Reconciler) deleteExpired(ctx context.Context, trainJob *trainer.TrainJob, policy runPolicy, tl ttlState) error {
	source := ""
	if policy.ttlFromRuntime {
		ref := trainJob.Spec.RuntimeRef
		source = fmt.Sprintf(" (the default in its runtime's runPolicy, %s %s)", ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind), ref.Name)
	}
	r.recorder.Normal(trainJob, ReasonTTLExpired, "TrainJob finished at %s and its ttlSecondsAfterFinished of %s%s has passed: deleting it, its JobSet and its pods",
		tl.finishedAt.UTC().Format(time.RFC3339), tl.limit, source)
	err := r.client.Delete(ctx, trainJob, client.PropagationPolicy(metav1.DeletePropagationForeground),
		client.Preconditions{UID: &trainJob.UID, ResourceVersion: &trainJob.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting TrainJob %s after its TTL: %w", client.ObjectKeyFromObject(trainJob), err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("deleted a TrainJob after its TTL", "finishedAt", tl.finishedAt, "ttl", tl.limit, "policy", policy.String())
	r.metrics.ObserveTTLDeleted(trainJob.Namespace)
	return nil
}
