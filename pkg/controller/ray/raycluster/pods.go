package raycluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
)

// headGroup is the expectations group of the head Pod; worker groups use
// their group name (the ray.io/group label values, so the pod event handler
// can map a Pod to its group).
const headGroup = rayv1.RayNodeHeadGroupLabelValue

// reconcilePods is KubeRay's pod decision chain: suspend, Recreate upgrade,
// the head Pod, then each worker group. A step that changed Pods usually
// returns so the next reconcile decides on the cache's new view.
func (r *Reconciler) reconcilePods(ctx context.Context, s *scope) error {
	defer s.podEvents.flush(&s.Events)
	cluster := s.Object
	suspending := meta.IsStatusConditionTrue(cluster.Status.Conditions, string(rayv1.RayClusterSuspending))
	suspended := meta.IsStatusConditionTrue(cluster.Status.Conditions, string(rayv1.RayClusterSuspended))
	if suspending || (!r.cfg.StatusConditions && cluster.Spec.IsSuspended()) {
		return r.deleteAllPods(ctx, s, nil, rayv1.DeletedPod, "the RayCluster is suspending")
	}
	if r.cfg.StatusConditions && (suspended || cluster.Spec.IsSuspended()) {
		// Suspended, or about to be: status moves it to Suspending first,
		// and only then are the Pods deleted.
		return nil
	}

	recreate, err := r.shouldRecreatePodsForUpgrade(ctx, s)
	if err != nil {
		return err
	}
	if recreate {
		r.expectations.Delete(client.ObjectKeyFromObject(cluster).String())
		return r.deleteAllPods(ctx, s, nil, rayv1.DeletedPod, "the RayCluster spec changed and upgradeStrategy is Recreate")
	}

	// Pods KubeRay made before Gantry took over are Gantry's from now on;
	// once the cache sees them, the next reconcile counts them.
	if adopted, err := r.adoptKubeRayPods(ctx, s); err != nil || adopted > 0 {
		return err
	}

	// A gang scheduler's PodGroup exists before the first Pod asks for it.
	if err := r.reconcilePodGroup(ctx, s); err != nil {
		r.recorder.Warning(cluster, "FailedToSyncPodGroup", "Failed to sync the PodGroup for batch scheduler %s: %v", r.cfg.Build.BatchScheduler, err)
		return err
	}

	// Over the pod limit the head is still kept (one Pod), but no worker is
	// created; scale-down and replacement deletions go on.
	s.podLimit = podLimitError(&cluster.Spec, r.cfg.MaxPodsPerCluster)
	skipWorkers, err := r.reconcileHeadPod(ctx, s)
	if err != nil || skipWorkers {
		return err
	}
	for i := range cluster.Spec.WorkerGroupSpecs {
		if err := r.reconcileWorkerGroup(ctx, s, &cluster.Spec.WorkerGroupSpecs[i]); err != nil {
			return err
		}
	}
	return nil
}

// IndexPodCluster maps a cached Pod to the RayCluster its ray.io/cluster
// label names. A reconcile lists its cluster's Pods through it several
// times; a list by the label instead matches the labels of every cached
// Pod of the namespace, and a new manager took 22 s to reconcile 1,000
// clusters once, with 5,000 Pods in their namespace.
const IndexPodCluster = "ray.pod.cluster"

// podClusterIndex is IndexPodCluster's index function.
func podClusterIndex(obj client.Object) []string {
	if name := obj.GetLabels()[rayv1.RayClusterLabelKey]; name != "" {
		return []string{name}
	}
	return nil
}

// loadPods reads the cluster's Pods from the cache once per reconcile
// (IndexPodCluster), after noting which Pod groups the cache had caught up
// with: a group whose creates and deletes the cache had seen before the
// list is complete in it, and only such a group is scaled (satisfied).
func (r *Reconciler) loadPods(ctx context.Context, s *scope) error {
	cluster := s.Object
	key := client.ObjectKeyFromObject(cluster).String()
	s.satisfiedAtLoad = map[string]bool{headGroup: r.expectations.Satisfied(key, headGroup)}
	for i := range cluster.Spec.WorkerGroupSpecs {
		g := cluster.Spec.WorkerGroupSpecs[i].GroupName
		s.satisfiedAtLoad[g] = r.expectations.Satisfied(key, g)
	}
	s.allSatisfiedAtLoad = r.expectations.SatisfiedAll(key)
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(cluster.Namespace), client.MatchingFields{IndexPodCluster: cluster.Name}); err != nil {
		return err
	}
	s.pods, s.podsLoaded = pods.Items, true
	return nil
}

// satisfied reports whether the cache has seen this manager's creates and
// deletes of the group, both now and when the Pods were read (loadPods).
func (r *Reconciler) satisfied(s *scope, key, group string) bool {
	if !r.expectations.Satisfied(key, group) {
		return false
	}
	return !s.podsLoaded || s.satisfiedAtLoad[group]
}

// listPods returns the cluster's Pods, optionally narrowed by more labels:
// those loadPods read, or from the cache before they are loaded (the GCS
// finalizer runs first).
func (r *Reconciler) listPods(ctx context.Context, s *scope, extra map[string]string) ([]corev1.Pod, error) {
	if s.podsLoaded {
		var out []corev1.Pod
		for _, p := range s.pods {
			if labelsMatch(p.Labels, extra) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	cluster := s.Object
	opts := []client.ListOption{client.InNamespace(cluster.Namespace), client.MatchingFields{IndexPodCluster: cluster.Name}}
	if len(extra) > 0 {
		opts = append(opts, client.MatchingLabels(extra))
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, opts...); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// labelsMatch reports whether labels hold every pair of want.
func labelsMatch(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// deleteAllPods deletes the cluster's Pods matching extra with a single
// DeleteCollection request, recording the deletions it expects, and notes
// them under reason (KubeRay's: DeletedPod for the whole cluster's,
// DeletedWorkerPod for a suspended group's).
func (r *Reconciler) deleteAllPods(ctx context.Context, s *scope, extra map[string]string, reason rayv1.EventReason, why string) error {
	cluster := s.Object
	pods, err := r.listPods(ctx, s, extra)
	if err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(cluster).String()
	byGroup := map[string][]types.UID{}
	var names []string
	for _, p := range pods {
		if p.DeletionTimestamp.IsZero() {
			g := p.Labels[rayv1.RayNodeGroupLabelKey]
			byGroup[g] = append(byGroup[g], p.UID)
			names = append(names, p.Name)
		}
	}
	if len(byGroup) == 0 {
		return nil
	}
	active := 0
	for g, uids := range byGroup {
		r.expectations.ExpectDeletions(key, g, uids...)
		active += len(uids)
	}
	sel := client.MatchingLabels{rayv1.RayClusterLabelKey: cluster.Name}
	for k, v := range extra {
		sel[k] = v
	}
	if err := r.client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(cluster.Namespace), sel); err != nil {
		for g, uids := range byGroup {
			r.expectations.CancelDeletions(key, g, uids...)
		}
		r.recorder.Warning(cluster, string(rayv1.FailedToDeletePodCollection), "Failed to delete the Pods of %s/%s: %v", cluster.Namespace, cluster.Name, err)
		return NewReplicaFailureError(rayv1.FailedDeleteAllPods, fmt.Errorf("deleting Pods: %w", err))
	}
	s.podsChanged = true
	s.podEvents.add(reason, names, "Deleted %s (%s)", events.Count(active, "Pod"), why)
	return nil
}

// deletePods deletes the given Pods one by one, recording expectations,
// and returns the names of those it deleted; a Pod already gone counts as
// deleted but is not named.
func (r *Reconciler) deletePods(ctx context.Context, s *scope, group string, pods []corev1.Pod) ([]string, error) {
	key := client.ObjectKeyFromObject(s.Object).String()
	var deleted []string
	for i := range pods {
		p := &pods[i]
		gone := false
		err := r.expectations.DeleteExpecting(key, group, func() error {
			err := r.client.Delete(ctx, p)
			gone = apierrors.IsNotFound(err)
			return err
		}, p.UID)
		if err != nil {
			return deleted, err
		}
		if gone {
			continue
		}
		s.podsChanged = true
		deleted = append(deleted, p.Name)
	}
	return deleted, nil
}

// shouldDeletePod is KubeRay's health rule, shared by head and workers: a
// Pod in a terminal phase is replaced, and so is a running Pod whose Ray
// container exited when nothing will restart it.
func shouldDeletePod(pod *corev1.Pod) (bool, string) {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return true, fmt.Sprintf("Pod %s is in the terminal phase %s", pod.Name, pod.Status.Phase)
	}
	if pod.Status.Phase == corev1.PodRunning {
		if term := rayContainerTerminated(pod); term != nil {
			if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				return true, fmt.Sprintf("the Ray container of Pod %s exited (code %d) and restartPolicy is Never", pod.Name, term.ExitCode)
			}
			return false, "the Ray container will be restarted by the kubelet"
		}
	}
	return false, ""
}

func rayContainerTerminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	name := pod.Spec.Containers[0].Name
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.State.Terminated
		}
	}
	return nil
}

// shouldRecreatePodsForUpgrade compares the head Pod's recorded spec hash
// with the current one under upgradeStrategy Recreate. A head Pod built by
// another operator version only gets its annotations refreshed: an operator
// upgrade must not restart every cluster.
func (r *Reconciler) shouldRecreatePodsForUpgrade(ctx context.Context, s *scope) (bool, error) {
	cluster := s.Object
	if cluster.Spec.UpgradeType() != rayv1.RayClusterRecreate {
		return false, nil
	}
	heads, err := r.listPods(ctx, s, map[string]string{rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode)})
	if err != nil || len(heads) == 0 {
		return false, err
	}
	head := heads[0].DeepCopy()
	want := podspec.SpecHash(&cluster.Spec)
	if v := head.Annotations[rayv1.KubeRayVersion]; v != "" && v != r.cfg.Build.OperatorVersion {
		patch := client.MergeFrom(head.DeepCopy())
		head.Annotations[rayv1.UpgradeStrategyRecreateHashKey] = want
		head.Annotations[rayv1.KubeRayVersion] = r.cfg.Build.OperatorVersion
		return false, r.client.Patch(ctx, head, patch)
	}
	got := head.Annotations[rayv1.UpgradeStrategyRecreateHashKey]
	return got != "" && got != want, nil
}

// reconcileHeadPod keeps exactly one healthy head Pod. skipWorkers is true
// when the head must not be recreated (ray.io/disable-provisioned-head-restart),
// which also stops worker reconciliation as in KubeRay.
func (r *Reconciler) reconcileHeadPod(ctx context.Context, s *scope) (skipWorkers bool, err error) {
	cluster := s.Object
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(cluster).String()
	if !r.satisfied(s, key, headGroup) {
		log.V(1).Info("head Pod expectations not yet satisfied; reconciling the head later")
		return false, nil
	}
	heads, err := r.listPods(ctx, s, map[string]string{rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode)})
	if err != nil {
		return false, err
	}
	switch {
	case len(heads) == 1:
		head := &heads[0]
		del, reason := shouldDeletePod(head)
		if !del {
			return false, nil
		}
		if _, err := r.deletePods(ctx, s, headGroup, heads); err != nil {
			r.recorder.Warning(cluster, string(rayv1.FailedToDeleteHeadPod), "Failed to delete head Pod %s: %v", head.Name, err)
			return false, NewReplicaFailureError(rayv1.FailedDeleteHeadPod, err)
		}
		s.Events.Add(string(rayv1.DeletedHeadPod), "Deleted head Pod %s: %s", head.Name, reason)
		// Like KubeRay, return an error so the next reconcile re-evaluates
		// once the deletion is visible.
		return false, fmt.Errorf("deleted head Pod %s: %s", head.Name, reason)
	case len(heads) == 0:
		if meta.IsStatusConditionTrue(cluster.Status.Conditions, string(rayv1.RayClusterProvisioned)) &&
			cluster.Annotations[rayv1.DisableProvisionedHeadRestartAnnotationKey] == "true" {
			log.Info("not recreating the head Pod of a provisioned RayCluster", "annotation", rayv1.DisableProvisionedHeadRestartAnnotationKey)
			return true, nil
		}
		pod := podspec.BuildHeadPod(cluster, r.cfg.Build)
		if _, err := r.expectations.CreateBatch(key, headGroup, 1, func(int) error { return r.client.Create(ctx, &pod) }); err != nil {
			r.recorder.Warning(cluster, string(rayv1.FailedToCreateHeadPod), "Failed to create head Pod for %s/%s: %v", cluster.Namespace, cluster.Name, err)
			return false, NewReplicaFailureError(rayv1.FailedCreateHeadPod, err)
		}
		s.podsChanged = true
		s.Events.Add(string(rayv1.CreatedHeadPod), "Created head Pod %s", pod.Name)
		return false, nil
	default:
		names := make([]string, 0, len(heads))
		for _, p := range heads {
			names = append(names, p.Name)
		}
		// Never pick one to delete: a user made them and may need them.
		return false, fmt.Errorf("%d head Pods found (%s); delete the extra ones", len(heads), strings.Join(names, ", "))
	}
}

// reconcileWorkerGroup scales one worker group to its desired size.
func (r *Reconciler) reconcileWorkerGroup(ctx context.Context, s *scope, group *rayv1.WorkerGroupSpec) error {
	cluster := s.Object
	log := ctrl.LoggerFrom(ctx).WithValues("group", group.GroupName)
	key := client.ObjectKeyFromObject(cluster).String()
	if !r.satisfied(s, key, group.GroupName) {
		log.V(1).Info("worker expectations not yet satisfied; reconciling the group later")
		return nil
	}
	groupLabels := map[string]string{rayv1.RayNodeTypeLabelKey: string(rayv1.WorkerNode), rayv1.RayNodeGroupLabelKey: group.GroupName}
	if group.IsSuspended() {
		return r.deleteAllPods(ctx, s, groupLabels, rayv1.DeletedWorkerPod, fmt.Sprintf("worker group %s is suspended", group.GroupName))
	}
	pods, err := r.listPods(ctx, s, groupLabels)
	if err != nil {
		return err
	}
	if group.Hosts() > 1 && r.cfg.Build.MultiHostIndexing {
		return r.reconcileMultiHostWorkerGroup(ctx, s, group, pods)
	}

	// Unhealthy workers go first, and nothing is created in the same pass:
	// the next reconcile sees their deletion and creates replacements.
	var unhealthy []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp.IsZero() {
			if del, _ := shouldDeletePod(&p); del {
				unhealthy = append(unhealthy, p)
			}
		}
	}
	if len(unhealthy) > 0 {
		names, err := r.deletePods(ctx, s, group.GroupName, unhealthy)
		s.podEvents.add(rayv1.DeletedWorkerPod, names, "Deleted %s in group %s", events.Count(len(names), "unhealthy worker Pod"), group.GroupName)
		if err != nil {
			r.recorder.Warning(s.Object, string(rayv1.FailedToDeleteWorkerPod), "Failed to delete unhealthy worker Pods in group %s: %v", group.GroupName, err)
			return NewReplicaFailureError(rayv1.FailedDeleteWorkerPod, err)
		}
		return fmt.Errorf("deleted %d unhealthy worker Pods in group %s", len(names), group.GroupName)
	}

	// The autoscaler's explicit choices are honoured whatever replicas says.
	deleted, err := r.deleteWorkersToDelete(ctx, s, group, pods)
	if err != nil {
		return err
	}

	var running []corev1.Pod
	for _, p := range pods {
		if _, gone := deleted[p.Name]; gone || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning || p.Status.Phase == "" {
			running = append(running, p)
		}
	}
	diff := int(group.DesiredPods()) - len(running)
	switch {
	case diff > 0:
		return r.createWorkers(ctx, s, group, running, diff)
	case diff < 0:
		if cluster.Spec.AutoscalingEnabled() && !r.cfg.EnableRandomPodDelete {
			// The autoscaler picks which workers go, through workersToDelete.
			log.V(1).Info("more workers than desired; waiting for the autoscaler to choose", "excess", -diff)
			return nil
		}
		victims := scaleDownVictims(running, -diff)
		names, err := r.deletePods(ctx, s, group.GroupName, victims)
		s.podEvents.add(rayv1.DeletedWorkerPod, names, "Deleted %s in group %s (scale down)", events.Count(len(names), "worker Pod"), group.GroupName)
		if err != nil {
			r.recorder.Warning(s.Object, string(rayv1.FailedToDeleteWorkerPod), "Failed to delete worker Pods in group %s: %v", group.GroupName, err)
			return NewReplicaFailureError(rayv1.FailedDeleteWorkerPod, err)
		}
	}
	return nil
}

// deleteWorkersToDelete deletes the Pods named in scaleStrategy.workersToDelete
// that still exist. Like KubeRay, the list is then treated as consumed for
// this reconcile; the autoscaler owns clearing it in the spec. Pods already
// gone are not deleted again, so a stale list costs no requests.
func (r *Reconciler) deleteWorkersToDelete(ctx context.Context, s *scope, group *rayv1.WorkerGroupSpec, pods []corev1.Pod) (map[string]bool, error) {
	deleted := map[string]bool{}
	if len(group.ScaleStrategy.WorkersToDelete) == 0 {
		return deleted, nil
	}
	wanted := map[string]bool{}
	for _, n := range group.ScaleStrategy.WorkersToDelete {
		wanted[n] = true
	}
	var victims []corev1.Pod
	for _, p := range pods {
		if wanted[p.Name] {
			deleted[p.Name] = true
			if p.DeletionTimestamp.IsZero() {
				victims = append(victims, p)
			}
		}
	}
	names, err := r.deletePods(ctx, s, group.GroupName, victims)
	s.podEvents.add(rayv1.DeletedWorkerPod, names, "Deleted %s in group %s named in workersToDelete", events.Count(len(names), "worker Pod"), group.GroupName)
	if err != nil {
		r.recorder.Warning(s.Object, string(rayv1.FailedToDeleteWorkerPod), "Failed to delete workersToDelete Pods in group %s: %v", group.GroupName, err)
		return deleted, NewReplicaFailureError(rayv1.FailedDeleteWorkerPod, err)
	}
	return deleted, nil
}

// createWorkers creates n worker Pods in slow-start batches, giving each
// the lowest free replica index.
func (r *Reconciler) createWorkers(ctx context.Context, s *scope, group *rayv1.WorkerGroupSpec, running []corev1.Pod, n int) error {
	if s.podLimit != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("not creating worker Pods", "group", group.GroupName, "reason", s.podLimit.Error())
		return nil
	}
	cluster := s.Object
	key := client.ObjectKeyFromObject(cluster).String()
	indices := freeIndices(running, n)
	// Batches create concurrently; each call has its own index.
	names := make([]string, n)
	created, err := r.expectations.CreateBatch(key, group.GroupName, n, func(i int) error {
		pod := podspec.BuildWorkerPod(cluster, group, podspec.WorkerReplica{Index: indices[i]}, r.cfg.Build)
		if err := r.client.Create(ctx, &pod); err != nil {
			return err
		}
		names[i] = pod.Name
		return nil
	})
	if created > 0 {
		s.podsChanged = true
		s.podEvents.add(rayv1.CreatedWorkerPod, nonEmpty(names), "Created %s in group %s", events.Count(created, "worker Pod"), group.GroupName)
	}
	if err != nil {
		r.recorder.Warning(cluster, string(rayv1.FailedToCreateWorkerPod), "Failed to create worker Pods in group %s: %v", group.GroupName, err)
		return NewReplicaFailureError(rayv1.FailedCreateWorkerPod, err)
	}
	return nil
}

// nonEmpty returns names without the empty ones, in order.
func nonEmpty(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// freeIndices returns the n lowest replica indices not used by pods.
func freeIndices(pods []corev1.Pod, n int) []int {
	used := map[int]bool{}
	for _, p := range pods {
		if i, err := strconv.Atoi(p.Labels[rayv1.RayWorkerReplicaIndexKey]); err == nil {
			used[i] = true
		}
	}
	out := make([]int, 0, n)
	for i := 0; len(out) < n; i++ {
		if !used[i] {
			out = append(out, i)
		}
	}
	return out
}

// scaleDownVictims picks n Pods to remove, preferring ones that do the
// least work: unscheduled, then pending, then not ready, then the newest.
func scaleDownVictims(pods []corev1.Pod, n int) []corev1.Pod {
	sorted := append([]corev1.Pod(nil), pods...)
	rank := func(p *corev1.Pod) int {
		switch {
		case p.Spec.NodeName == "":
			return 0
		case p.Status.Phase == corev1.PodPending:
			return 1
		case !podcond.IsReady(p):
			return 2
		}
		return 3
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		ri, rj := rank(&sorted[i]), rank(&sorted[j])
		if ri != rj {
			return ri < rj
		}
		ti, tj := sorted[i].CreationTimestamp, sorted[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return sorted[i].Name > sorted[j].Name
	})
	if n > len(sorted) {
		n = len(sorted)
	}
	return sorted[:n]
}
