package rayjob

import (
	"context"
	"errors"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	"github.com/gantry-dev/gantry/pkg/framework/status"
)

// errStale: the RayJob changed since it was read; the status computed
// from the old one is dropped and the reconcile runs again.
var errStale = errors.New("the RayJob changed while it was reconciled")

// staleRequeue is how soon a reconcile whose status write found the RayJob
// changed runs again.
const staleRequeue = 100 * time.Millisecond

// Status writes the status the state's handler computed, once: for an
// invalid RayJob, ValidationFailed; after a failed step or a handler that
// held, nothing (the next reconcile computes it again). As KubeRay, a
// write happens only when a field its state machine keys on changed.
func (r *Reconciler) Status(ctx context.Context, s *scope, err error) error {
	job := s.Object
	var verr *validation.RayJobValidationError
	switch {
	case errors.As(err, &verr):
		job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusValidationFailed
		job.Status.Reason = rayv1.ValidationFailed
		job.Status.Message = verr.Error()
	case err != nil || s.hold:
		return nil
	default:
		countAttempt(job)
	}
	if !statusChanged(&s.observed, &job.Status) {
		return nil
	}
	if rayv1.IsJobDeploymentTerminal(job.Status.JobDeploymentStatus) {
		job.Status.EndTime = &metav1.Time{Time: s.now}
	}
	desired := job.Status
	rv := job.ResourceVersion
	job.Status = s.observed
	_, werr := status.Update(ctx, r.client, job, func(j *rayv1.RayJob) error {
		if j.ResourceVersion != rv {
			return errStale
		}
		j.Status = desired
		return nil
	}, status.WithEqual(func(_, _ *rayv1.RayJob) bool { return false }))
	if errors.Is(werr, errStale) {
		ctrl.LoggerFrom(ctx).V(1).Info("RayJob changed during the reconcile; its status is computed again")
		s.Requeue.After(staleRequeue)
		return nil
	}
	if werr != nil {
		return werr
	}
	if r.metrics != nil {
		r.metrics.ObserveTransition(job, s.observed, s.now)
		r.metrics.SetInfo(job)
	}
	return nil
}

// countAttempt counts a Complete or Failed attempt and, while
// backoffLimit allows, turns a failure into a retry on a new cluster. A
// deadline or a dashboard that never answered is not retried.
func countAttempt(job *rayv1.RayJob) {
	failed, succeeded := ptr.Deref(job.Status.Failed, 0), ptr.Deref(job.Status.Succeeded, 0)
	st := &job.Status
	if st.JobDeploymentStatus == rayv1.JobDeploymentStatusFailed {
		failed++
	}
	if st.JobStatus == rayv1.JobStatusSucceeded && st.JobDeploymentStatus == rayv1.JobDeploymentStatusComplete {
		succeeded++
	}
	st.Failed, st.Succeeded = &failed, &succeeded
	limit := job.Spec.BackoffLimit
	if st.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed || limit == nil || failed >= *limit+1 {
		return
	}
	if st.Reason == rayv1.DeadlineExceeded || st.Reason == rayv1.JobStatusCheckTimeoutExceeded {
		return
	}
	st.JobDeploymentStatus = rayv1.JobDeploymentStatusRetrying
}

// statusChanged is KubeRay's rule for writing a RayJob's status: the Ray
// job's or the deployment's status changed, the cluster's status changed
// in a field a user watches, or the status check failure began or ended.
// Everything else rides along with such a change.
func statusChanged(old, updated *rayv1.RayJobStatus) bool {
	if old.JobStatus != updated.JobStatus || old.JobDeploymentStatus != updated.JobDeploymentStatus {
		return true
	}
	if !timesEqual(old.JobStatusCheckFailureStartTime, updated.JobStatusCheckFailureStartTime) {
		return true
	}
	return clusterStatusChanged(&old.RayClusterStatus, &updated.RayClusterStatus)
}

func timesEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// clusterStatusChanged ignores the cluster's lastUpdateTime and
// observedGeneration, which change on every cluster status write.
func clusterStatusChanged(a, b *rayv1.RayClusterStatus) bool {
	return a.State != b.State || a.Reason != b.Reason ||
		a.ReadyWorkerReplicas != b.ReadyWorkerReplicas || a.AvailableWorkerReplicas != b.AvailableWorkerReplicas ||
		a.DesiredWorkerReplicas != b.DesiredWorkerReplicas || a.MinWorkerReplicas != b.MinWorkerReplicas ||
		a.MaxWorkerReplicas != b.MaxWorkerReplicas ||
		!reflect.DeepEqual(a.Endpoints, b.Endpoints) || !reflect.DeepEqual(a.Head, b.Head) ||
		!reflect.DeepEqual(a.Conditions, b.Conditions)
}
