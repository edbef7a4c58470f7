package raycluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/finalizers"
)

// The bound on the Redis cleanup, as in KubeRay v1.6.2.
const (
	// GCSFTDeletionTimeoutAnnotation is KubeRay's
	// utils.RayClusterGCSFTDeletionTimeoutAnnotation: how long, in whole
	// seconds after its deletionTimestamp, a deleted cluster waits for its
	// Redis cleanup before the finalizer is removed anyway.
	GCSFTDeletionTimeoutAnnotation = "ray.io/gcs-ft-deletion-timeout"
	// DefaultGCSFTDeletionTimeout is KubeRay's
	// RAYCLUSTER_GCS_FT_DELETION_TIMEOUT_DEFAULT (300 s), used when the
	// annotation is missing, unparsable or not positive.
	DefaultGCSFTDeletionTimeout = 300 * time.Second
	// ReasonForceDeletedStuckCluster is KubeRay's Warning when the timeout
	// removes the finalizer.
	ReasonForceDeletedStuckCluster = "ForceDeletedStuckCluster"
)

// gcsFTDeletionTimeout is the cluster's annotation or the default, read as
// KubeRay's getGCSFTDeletionTimeout does.
func gcsFTDeletionTimeout(cluster *rayv1.RayCluster) time.Duration {
	if v, ok := cluster.Annotations[GCSFTDeletionTimeoutAnnotation]; ok {
		if s, err := strconv.Atoi(v); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return DefaultGCSFTDeletionTimeout
}

// reconcileGCSFTFinalizer runs the Redis cleanup finalizer's lifecycle for
// GCS fault-tolerant clusters: add it to live clusters; on deletion delete
// the head Pod (it writes to Redis) and the workers, wait for the head to be
// gone, run the cleanup Job, and remove the finalizer once the Job finished
// either way, or when the deletion is older than gcsFTDeletionTimeout (a Job
// that never runs or is never admitted, a head stuck Terminating past its
// grace period).
// handled means the reconcile ends with res and err.
func (r *Reconciler) reconcileGCSFTFinalizer(ctx context.Context, cluster *rayv1.RayCluster) (res ctrl.Result, handled bool, err error) {
	const fin = rayv1.GCSFaultToleranceRedisCleanupFinalizer
	has := controllerutil.ContainsFinalizer(cluster, fin)
	if cluster.DeletionTimestamp.IsZero() {
		if !r.cfg.EnableGCSFTRedisCleanup || !cluster.GCSFaultToleranceEnabled() || has {
			return ctrl.Result{}, false, nil
		}
		if _, err := finalizers.Add(ctx, r.client, cluster, fin); err != nil {
			return ctrl.Result{RequeueAfter: ShortRequeue}, true, err
		}
		return ctrl.Result{RequeueAfter: ShortRequeue}, true, nil
	}
	// A finalizer added while cleanup was enabled is honoured even if the
	// cluster's GCS settings changed since: the keys are still in Redis.
	if !has {
		return ctrl.Result{}, false, nil
	}

	s := newScope(cluster)
	// This path writes no status: what changed is reported at its end,
	// after the finalizer write, if any.
	defer s.Events.Flush(r.recorder, cluster)
	headLabels := map[string]string{rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode)}
	err = r.deleteAllPods(ctx, s, headLabels, rayv1.DeletedPod, "the RayCluster is being deleted")
	if err == nil {
		workerLabels := map[string]string{rayv1.RayNodeTypeLabelKey: string(rayv1.WorkerNode)}
		err = r.deleteAllPods(ctx, s, workerLabels, rayv1.DeletedPod, "the RayCluster is being deleted")
	}
	s.podEvents.flush(&s.Events)
	if err != nil {
		return ctrl.Result{RequeueAfter: ShortRequeue}, true, err
	}
	heads, err := r.listPods(ctx, s, headLabels)
	if err != nil {
		return ctrl.Result{RequeueAfter: ShortRequeue}, true, err
	}

	// As in KubeRay the clock starts at the deletionTimestamp.
	timeout := gcsFTDeletionTimeout(cluster)
	remaining := cluster.DeletionTimestamp.Add(timeout).Sub(r.clock.Now())
	if len(heads) > 0 {
		// The head writes to Redis until it is gone; cleaning up earlier
		// could race with it. KubeRay waits for it however long it takes;
		// a head stuck Terminating (its node lost, a finalizer nobody
		// removes) would hold the cluster forever. Once its own grace
		// period is over, the timeout applies to it too.
		stuck := headsPastGrace(heads, r.clock.Now())
		if remaining > 0 || stuck == "" {
			return ctrl.Result{RequeueAfter: headTerminationRequeue}, true, nil
		}
		why := fmt.Sprintf("the head Pod %s is stuck terminating past its grace period, so the Redis cleanup Job never ran", stuck)
		return r.forceRemoveGCSFTFinalizer(ctx, cluster, timeout, why)
	}

	job := &batchv1.Job{}
	err = r.client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: RedisCleanupJobName(cluster)}, job)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{RequeueAfter: ShortRequeue}, true, err
	}
	if found {
		// A finished Job says how the cleanup ended, even past the timeout.
		if finished, failed := jobFinished(job); finished {
			if failed {
				r.recorder.Warning(cluster, "RedisCleanupFailed",
					"The Redis cleanup Job %s failed; delete the storage namespace %q from Redis by hand", job.Name, podspec.ExternalStorageNamespace(cluster))
			}
			return r.removeGCSFTFinalizer(ctx, cluster)
		}
	}
	if remaining <= 0 {
		state := "was never created"
		if found {
			state = "did not finish"
		}
		return r.forceRemoveGCSFTFinalizer(ctx, cluster, timeout, fmt.Sprintf("the Redis cleanup Job %s %s", RedisCleanupJobName(cluster), state))
	}
	if found {
		// Job changes trigger a reconcile (the Job is owned): the one
		// wake-up needed is the deadline.
		return ctrl.Result{RequeueAfter: r.untilGCSFTDeadline(remaining)}, true, nil
	}

	desired := BuildRedisCleanupJob(cluster, r.cfg.Build)
	if err := r.client.Create(ctx, &desired); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// Nothing new can be created in a namespace being deleted,
			// the cleanup Job included; waiting would keep the RayCluster,
			// and so the namespace, Terminating forever.
			msg := fmt.Sprintf("The namespace %s is being deleted, so the Redis cleanup Job cannot run; delete the storage namespace %q from Redis by hand",
				cluster.Namespace, podspec.ExternalStorageNamespace(cluster))
			r.recorder.Warning(cluster, "RedisCleanupSkipped", "%s", msg)
			ctrl.LoggerFrom(ctx).Info(msg)
			return r.removeGCSFTFinalizer(ctx, cluster)
		}
		r.recorder.Warning(cluster, string(rayv1.FailedToCreateRedisCleanupJob), "Failed to create the Redis cleanup Job %s: %v", desired.Name, err)
		return ctrl.Result{RequeueAfter: ShortRequeue}, true, err
	}
	s.Events.Add(string(rayv1.CreatedRedisCleanupJob), "Created Redis cleanup Job %s", desired.Name)
	return ctrl.Result{RequeueAfter: min(ShortRequeue, remaining)}, true, nil
}

// untilGCSFTDeadline is the requeue while a cleanup Job runs: the time left,
// capped by the periodic resync.
func (r *Reconciler) untilGCSFTDeadline(remaining time.Duration) time.Duration {
	if r.cfg.DefaultRequeue > 0 {
		return min(remaining, r.cfg.DefaultRequeue)
	}
	return remaining
}

// forceRemoveGCSFTFinalizer lets a deleted cluster go once the deletion
// timeout has passed without a cleanup, with KubeRay's
// ForceDeletedStuckCluster Warning saying why and what to clean by hand.
func (r *Reconciler) forceRemoveGCSFTFinalizer(ctx context.Context, cluster *rayv1.RayCluster, timeout time.Duration, why string) (ctrl.Result, bool, error) {
	age := r.clock.Now().Sub(cluster.DeletionTimestamp.Time).Round(time.Second)
	msg := fmt.Sprintf("Force-removed GCS FT finalizer after %v due to Redis cleanup timeout (%v, annotation %s): %s; Redis storage namespace %q may need manual cleanup",
		age, timeout, GCSFTDeletionTimeoutAnnotation, why, podspec.ExternalStorageNamespace(cluster))
	res, handled, err := r.removeGCSFTFinalizer(ctx, cluster)
	if err == nil {
		// Like KubeRay, report it once the finalizer is gone.
		r.recorder.Warning(cluster, ReasonForceDeletedStuckCluster, "%s", msg)
		ctrl.LoggerFrom(ctx).Info(msg)
	}
	return res, handled, err
}

// headsPastGrace names a head Pod when every one of heads is being deleted
// and past its grace period (a Pod's deletionTimestamp is when its grace
// period ends), so none can still be running: "" while any may be.
func headsPastGrace(heads []corev1.Pod, now time.Time) string {
	for i := range heads {
		if heads[i].DeletionTimestamp == nil || now.Before(heads[i].DeletionTimestamp.Time) {
			return ""
		}
	}
	return heads[0].Name
}

// removeGCSFTFinalizer lets a deleted GCS fault-tolerant cluster go.
func (r *Reconciler) removeGCSFTFinalizer(ctx context.Context, cluster *rayv1.RayCluster) (ctrl.Result, bool, error) {
	const fin = rayv1.GCSFaultToleranceRedisCleanupFinalizer
	if _, err := finalizers.Remove(ctx, r.client, cluster, fin); err != nil {
		return ctrl.Result{RequeueAfter: ShortRequeue}, true, err
	}
	return ctrl.Result{}, true, nil
}

func jobFinished(job *batchv1.Job) (finished, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return true, false
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return true, true
		}
	}
	return false, false
}
