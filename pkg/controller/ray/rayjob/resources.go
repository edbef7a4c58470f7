package rayjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/dashboards"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/submitter"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// clusterFor returns the RayJob's cluster, creating it from
// spec.rayClusterSpec the first time. A clusterSelector's cluster must
// exist: it is never created.
func (r *Reconciler) clusterFor(ctx context.Context, s *scope) (*rayv1.RayCluster, error) {
	if s.cluster != nil {
		return s.cluster, nil
	}
	job := s.Object
	key := clusterKey(job)
	if len(job.Spec.ClusterSelector) != 0 {
		r.recorder.Warning(job, string(rayv1.RayClusterNotFound), "RayCluster %s set in the clusterSelector is not found. It must be created manually", key)
		return nil, fmt.Errorf("clusterSelector names RayCluster %s, which is not found", key)
	}
	cluster, err := submitter.ClusterFor(job, key.Name, r.submitterOptions())
	if err != nil {
		return nil, err
	}
	if err := r.client.Create(ctx, cluster); err != nil {
		r.recorder.Warning(job, string(rayv1.FailedToCreateRayCluster), "Failed to create RayCluster %s: %v", key, err)
		return nil, err
	}
	s.Events.Add(string(rayv1.CreatedRayCluster), "Created RayCluster %s", key)
	s.cluster = cluster
	return cluster, nil
}

func (r *Reconciler) submitterOptions() submitter.Options {
	return submitter.Options{SidecarSubmitterRestart: r.cfg.SidecarSubmitterRestart, LoginShell: r.cfg.Build.LoginShell}
}

// dashboardAddressOf is host:port of the cluster's dashboard through its
// head Service.
func (r *Reconciler) dashboardAddressOf(ctx context.Context, cluster *rayv1.RayCluster) (string, error) {
	name := cluster.Status.Head.ServiceName
	if name == "" {
		name = podspec.HeadServiceName(cluster)
	}
	svc := &corev1.Service{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: cluster.Namespace, Name: name}, svc); err != nil {
		return "", fmt.Errorf("reading the head Service of RayCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	return dashboards.Address(svc, r.cfg.Build.ClusterDomain)
}

// ensureSubmitter creates the K8sJobMode submitter Job once.
func (r *Reconciler) ensureSubmitter(ctx context.Context, s *scope, cluster *rayv1.RayCluster) error {
	if s.submitter != nil {
		return nil
	}
	job := s.Object
	template, err := submitter.Template(job, cluster, r.submitterOptions())
	if err != nil {
		return err
	}
	want := submitter.Job(job, template)
	// Gantry's cache holds only the Jobs it manages (this label).
	want.Labels = builder.MergeLabels(want.Labels, map[string]string{builder.LabelManagedBy: builder.ManagedByGantry})
	err = r.client.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		// One created by KubeRay's operator before a migration (not in
		// Gantry's cache): take it over if it is this RayJob's.
		existing, aerr := r.adopt(ctx, job, &batchv1.Job{}, submitterKey(job))
		if aerr != nil {
			return aerr
		}
		s.submitter = existing.(*batchv1.Job)
		return nil
	}
	if err != nil {
		r.recorder.Warning(job, string(rayv1.FailedToCreateRayJobSubmitter), "Failed to create new Kubernetes Job %s/%s: %v", want.Namespace, want.Name, err)
		return err
	}
	s.Events.Add(string(rayv1.CreatedRayJobSubmitter), "Created Kubernetes Job %s/%s", want.Namespace, want.Name)
	s.submitter = want
	return nil
}

// errNotControlled is adopt's error for an object the RayJob does not
// control.
var errNotControlled = errors.New("never taken over")

// adopt reads an object the cache does not hold and labels it Gantry's if
// the RayJob controls it; one the RayJob does not control is an error,
// never taken over.
func (r *Reconciler) adopt(ctx context.Context, job *rayv1.RayJob, obj client.Object, key types.NamespacedName) (client.Object, error) {
	if err := r.apiReader.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(obj, job) {
		return nil, fmt.Errorf("%s %s exists and is not RayJob %s's: %w", kindOf(obj), key, job.Name, errNotControlled)
	}
	if obj.GetLabels()[builder.LabelManagedBy] != builder.ManagedByGantry {
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, builder.LabelManagedBy, builder.ManagedByGantry))
		if err := r.client.Patch(ctx, obj, patch); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *batchv1.Job:
		return "Job"
	case *corev1.Service:
		return "Service"
	}
	return fmt.Sprintf("%T", obj)
}

// ensureHeadService keeps "<rayjob>-head-svc" pointing at the head of the
// RayJob's current cluster (a retry's cluster is a new one), as KubeRay's
// RayJob does: a stable name for the job's dashboard and client.
func (r *Reconciler) ensureHeadService(ctx context.Context, s *scope, cluster *rayv1.RayCluster) error {
	job := s.Object
	if len(job.Spec.ClusterSelector) != 0 {
		return nil
	}
	want := headService(job, cluster, r.cfg.Build)
	key := client.ObjectKeyFromObject(want)
	live := &corev1.Service{}
	err := r.client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		err = r.client.Create(ctx, want)
		if err == nil {
			s.Events.Add(string(rayv1.CreatedService), "Created the service %s", key)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			r.recorder.Warning(job, string(rayv1.FailedToCreateService), "Failed to create the service %s, %v", key, err)
			return err
		}
		obj, aerr := r.adopt(ctx, job, &corev1.Service{}, key)
		if aerr != nil {
			return aerr
		}
		live, err = obj.(*corev1.Service), nil
	}
	if err != nil {
		return err
	}
	if live.Spec.Selector[rayv1.RayClusterLabelKey] == want.Spec.Selector[rayv1.RayClusterLabelKey] {
		return nil
	}
	// A new cluster: the selector follows it; the ClusterIP cannot change.
	want.Spec.ClusterIP, want.Spec.ClusterIPs = live.Spec.ClusterIP, live.Spec.ClusterIPs
	live.Spec = want.Spec
	if err := r.client.Update(ctx, live); err != nil {
		r.recorder.Warning(job, string(rayv1.FailedToUpdateService), "Failed to update the service %s, %v", key, err)
		return err
	}
	s.Events.Add(string(rayv1.UpdatedService), "Updated the service %s", key)
	return nil
}

// headService is the cluster's head Service under the RayJob's name and
// labels, owned by the RayJob.
func headService(job *rayv1.RayJob, cluster *rayv1.RayCluster, opts podspec.BuildOptions) *corev1.Service {
	svc := podspec.BuildHeadService(cluster, opts)
	svc.Name = job.Name + "-head-svc"
	svc.Namespace = job.Namespace
	svc.Labels = map[string]string{
		rayv1.RayOriginatedFromCRNameLabelKey: job.Name,
		rayv1.RayOriginatedFromCRDLabelKey:    rayv1.RayJobKind,
		rayv1.RayNodeTypeLabelKey:             string(rayv1.HeadNode),
		rayv1.RayIDLabelKey:                   podspec.CheckLabel(job.Name + "-" + string(rayv1.HeadNode)),
		builder.LabelManagedBy:                builder.ManagedByGantry,
	}
	svc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, rayv1.RayJobGroupVersionKind)}
	return svc
}

// checkSubmitter looks at the submitter (the K8sJobMode Job or the
// SidecarMode container): failed reports a submitter that failed, which
// fails the RayJob; finishedAt is when it ended, nil while it runs.
func (r *Reconciler) checkSubmitter(ctx context.Context, s *scope, cluster *rayv1.RayCluster) (failed bool, finishedAt *time.Time, err error) {
	job := s.Object
	if mode(job) == rayv1.SidecarMode {
		return r.checkSidecar(ctx, s, cluster)
	}
	sub := s.submitter
	if sub == nil {
		return false, nil, fmt.Errorf("the submitter Job %s is gone", submitterKey(job))
	}
	for _, c := range sub.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobFailed:
			failed = true
			submissionFailed(job, fmt.Sprintf("Job submission has failed. Reason: %s. Message: %s", c.Reason, c.Message))
			fallthrough
		case batchv1.JobComplete:
			if finishedAt == nil && !c.LastTransitionTime.IsZero() {
				t := c.LastTransitionTime.Time
				finishedAt = &t
			}
		}
	}
	return failed, finishedAt, nil
}

// submissionFailed fails the RayJob for its submitter: the application's
// failure when the Ray job itself failed, else the submission's.
func submissionFailed(job *rayv1.RayJob, message string) {
	job.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed
	if job.Status.JobStatus == rayv1.JobStatusFailed {
		job.Status.Reason = rayv1.AppFailed
		return
	}
	job.Status.Reason = rayv1.SubmissionFailed
	job.Status.Message = message
}

// headPod is the cluster's head Pod, nil when there is none. Two (a head
// being replaced) are an error, as in KubeRay: the reconcile waits rather
// than read the submitter container of the wrong one.
func (r *Reconciler) headPod(ctx context.Context, cluster *rayv1.RayCluster) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(cluster.Namespace),
		client.MatchingLabels{rayv1.RayClusterLabelKey: cluster.Name, rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode)}); err != nil {
		return nil, err
	}
	switch len(pods.Items) {
	case 0:
		return nil, nil
	case 1:
		return &pods.Items[0], nil
	}
	return nil, fmt.Errorf("RayCluster %s/%s has %d head Pods", cluster.Namespace, cluster.Name, len(pods.Items))
}

// containerStatus is the status of pod's container name, nil before the
// kubelet reported one.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if cs := &pod.Status.ContainerStatuses[i]; cs.Name == name {
			return cs
		}
	}
	return nil
}

// submitterBackoffLimit is how many restarts a SidecarSubmitterRestart
// submitter container gets (submitterConfig.backoffLimit, 2).
func submitterBackoffLimit(job *rayv1.RayJob) int32 {
	if c := job.Spec.SubmitterConfig; c != nil && c.BackoffLimit != nil {
		return *c.BackoffLimit
	}
	return 2
}

// sidecarEndedFirst tells whether a SidecarMode RayJob whose cluster is
// not ready may stop waiting for it: the head Pod's submitter container
// has ended for good, so the Pod, which needs every container ready, never
// turns Ready; and the head's Ray container runs, so its dashboard can
// tell the Ray job's status. KubeRay v1.7.0 waits for a ready cluster (a
// deliberate difference: its RayJob stays Initializing although the Ray
// job ran). The Running state then reads the Ray job and the submitter's
// end as it does after a ready cluster.
func (r *Reconciler) sidecarEndedFirst(ctx context.Context, s *scope, cluster *rayv1.RayCluster) (bool, error) {
	job := s.Object
	if mode(job) != rayv1.SidecarMode {
		return false, nil
	}
	pod, err := r.headPod(ctx, cluster)
	if err != nil || pod == nil || len(pod.Spec.Containers) == 0 || pod.DeletionTimestamp != nil {
		return false, err
	}
	ray := containerStatus(pod, pod.Spec.Containers[0].Name)
	if ray == nil || ray.State.Running == nil {
		return false, nil
	}
	sub := containerStatus(pod, rayv1.SubmitterContainerName)
	return sub != nil && r.submitterEnded(job, sub), nil
}

// submitterEnded: the submitter container will not run again. Under the
// Pod's restartPolicy Never any end is the last; with
// SidecarSubmitterRestart the container restarts on failure, so only an
// exit 0 or a failure past its restarts (which checkSidecar turns into a
// failed RayJob) is.
func (r *Reconciler) submitterEnded(job *rayv1.RayJob, status *corev1.ContainerStatus) bool {
	terminated, last := status.State.Terminated, status.LastTerminationState.Terminated
	if !r.cfg.SidecarSubmitterRestart {
		return terminated != nil || last != nil
	}
	if terminated != nil && terminated.ExitCode == 0 {
		return true
	}
	return last != nil && status.RestartCount >= submitterBackoffLimit(job)
}

// checkSidecar reads the submitter container in the head Pod.
func (r *Reconciler) checkSidecar(ctx context.Context, s *scope, cluster *rayv1.RayCluster) (bool, *time.Time, error) {
	job := s.Object
	pod, err := r.headPod(ctx, cluster)
	if err != nil {
		return false, nil, err
	}
	if pod == nil {
		fail(job, rayv1.AppFailed, "Ray head pod not found.")
		return true, nil, nil
	}
	status := containerStatus(pod, rayv1.SubmitterContainerName)
	if status == nil {
		return false, nil, nil
	}
	var finishedAt *time.Time
	if t := status.State.Terminated; t != nil {
		at := t.FinishedAt.Time
		finishedAt = &at
	}
	if !r.cfg.SidecarSubmitterRestart {
		if t := status.State.Terminated; t != nil && t.ExitCode != 0 {
			submissionFailed(job, fmt.Sprintf("Ray head pod container %s terminated with exit code %d: %s", status.Name, t.ExitCode, t.Reason))
			return true, finishedAt, nil
		}
		return false, finishedAt, nil
	}
	limit := submitterBackoffLimit(job)
	succeeded := status.State.Terminated != nil && status.State.Terminated.ExitCode == 0
	if status.LastTerminationState.Terminated != nil && !succeeded && status.RestartCount >= limit {
		submissionFailed(job, fmt.Sprintf("Ray head pod submitter container %s terminated after exceeding the maximum restart count", status.Name))
		return true, finishedAt, nil
	}
	return false, finishedAt, nil
}

// deleteCluster deletes the RayJob's cluster (never a clusterSelector's)
// and reports whether it is gone.
func (r *Reconciler) deleteCluster(ctx context.Context, s *scope) (bool, error) {
	job := s.Object
	if len(job.Spec.ClusterSelector) != 0 || s.cluster == nil {
		return true, nil
	}
	cluster := s.cluster
	if cluster.DeletionTimestamp != nil {
		return false, nil
	}
	if err := r.client.Delete(ctx, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		r.recorder.Warning(job, string(rayv1.FailedToDeleteRayCluster), "Failed to delete cluster %s/%s: %v", cluster.Namespace, cluster.Name, err)
		return false, err
	}
	s.Events.Add(string(rayv1.DeletedRayCluster), "Deleted cluster %s/%s", cluster.Namespace, cluster.Name)
	return false, nil
}

// deleteSubmitter deletes the K8sJobMode submitter Job (a resumed RayJob
// needs a new one under the same name) and reports whether it is gone.
func (r *Reconciler) deleteSubmitter(ctx context.Context, s *scope) (bool, error) {
	job := s.Object
	sub := s.submitter
	if sub == nil {
		return true, nil
	}
	if sub.DeletionTimestamp != nil {
		return false, nil
	}
	if err := r.client.Delete(ctx, sub, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		r.recorder.Warning(job, string(rayv1.FailedToDeleteRayJobSubmitter), "Failed to delete submitter K8s Job %s/%s: %v", sub.Namespace, sub.Name, err)
		return false, err
	}
	s.Events.Add(string(rayv1.DeletedRayJobSubmitter), "Deleted submitter K8s Job %s/%s", sub.Namespace, sub.Name)
	return false, nil
}
