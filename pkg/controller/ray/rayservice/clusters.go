package rayservice

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
)

// generateClusterName is "<rayservice>-<5 random characters>", KubeRay's
// GenerateRayClusterName.
func generateClusterName(service string) string { return service + "-" + rand.String(5) }

// listClusters returns the RayClusters made for svc: those with its
// association labels (KubeRay's) that it controls. A cluster that merely
// carries the labels is never deleted or changed.
func (r *Reconciler) listClusters(ctx context.Context, svc *rayv1.RayService) ([]rayv1.RayCluster, error) {
	list := &rayv1.RayClusterList{}
	if err := r.client.List(ctx, list, client.InNamespace(svc.Namespace), client.MatchingLabels{
		rayv1.RayOriginatedFromCRNameLabelKey: svc.Name,
		rayv1.RayOriginatedFromCRDLabelKey:    rayv1.RayServiceKind,
	}); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], svc) {
			out = append(out, list.Items[i])
		}
	}
	return out, nil
}

// deleteCluster deletes one of the RayService's clusters (in the
// background: its Pods follow by garbage collection).
func (r *Reconciler) deleteCluster(ctx context.Context, s *scope, c *rayv1.RayCluster, why string) {
	if c.DeletionTimestamp != nil {
		return
	}
	ctrl.LoggerFrom(ctx).Info("deleting RayCluster", "cluster", c.Name, "reason", why)
	err := r.client.Delete(ctx, c, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &c.UID})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		r.recorder.Warning(s.Object, string(rayv1.FailedToDeleteRayCluster), "Failed to delete the RayCluster %s/%s: %v", c.Namespace, c.Name, err)
	default:
		s.Events.Add(string(rayv1.DeletedRayCluster), "Deleted the RayCluster %s/%s", c.Namespace, c.Name)
	}
}

// cleanUpClusters deletes the clusters that are neither active nor
// pending once their deletion delay (rayClusterDeletionDelaySeconds, 60 s)
// has passed since they were first seen so. It reports whether any such
// cluster is left.
func (r *Reconciler) cleanUpClusters(ctx context.Context, s *scope) (bool, error) {
	svc := s.Object
	delay := DefaultClusterDeletionDelay
	if d := svc.Spec.RayClusterDeletionDelaySeconds; d != nil {
		delay = time.Duration(*d) * time.Second
	}
	left := false
	for i := range s.clusters {
		c := &s.clusters[i]
		if c.Name == svc.Status.ActiveServiceStatus.RayClusterName || c.Name == svc.Status.PendingServiceStatus.RayClusterName {
			continue
		}
		left = true
		at, ok := r.deletions.get(keyOf(svc), c.Name)
		if !ok {
			r.deletions.set(keyOf(svc), c.Name, s.now.Add(delay))
			ctrl.LoggerFrom(ctx).Info("scheduled a replaced RayCluster for deletion", "cluster", c.Name, "at", s.now.Add(delay))
			s.Requeue.After(delay)
			continue
		}
		if s.now.Before(at) {
			s.Requeue.After(at.Sub(s.now))
			continue
		}
		r.deleteCluster(ctx, s, c, "its deletion delay has passed")
	}
	return left, nil
}

// reconcileClusters creates the pending cluster the status names, and
// updates a cluster in place when the spec only added worker groups at
// the end (or the active one was built by another operator version).
func (r *Reconciler) reconcileClusters(ctx context.Context, s *scope) error {
	svc := s.Object
	if name := svc.Status.PendingServiceStatus.RayClusterName; name != "" && s.pending == nil {
		c := BuildCluster(svc, name, r.cfg.Build.OperatorVersion)
		if err := r.client.Create(ctx, c); err != nil {
			r.recorder.Warning(svc, string(rayv1.FailedToCreateRayCluster), "Failed to create the RayCluster %s/%s: %v", c.Namespace, c.Name, err)
			return err
		}
		s.Events.Add(string(rayv1.CreatedRayCluster), "Created the RayCluster %s/%s", c.Namespace, c.Name)
		s.pending = c
		return nil
	}
	for _, c := range []struct {
		cluster *rayv1.RayCluster
		active  bool
	}{{s.active, true}, {s.pending, false}} {
		if !r.shouldUpdateCluster(svc, c.cluster, c.active) {
			continue
		}
		goal := BuildCluster(svc, c.cluster.Name, r.cfg.Build.OperatorVersion)
		cur := c.cluster
		// Suspend passes to a cluster only when it is created; after that
		// it is Kueue's.
		suspend := cur.Spec.Suspend
		cur.Spec = goal.Spec
		cur.Spec.Suspend = suspend
		cur.Labels, cur.Annotations = goal.Labels, goal.Annotations
		which := "pending"
		if c.active {
			which = "active"
		}
		if err := r.client.Update(ctx, cur); err != nil {
			r.recorder.Warning(svc, string(rayv1.FailedToUpdateRayCluster), "Failed to update the %s RayCluster %s/%s: %v", which, cur.Namespace, cur.Name, err)
			return err
		}
		s.Events.Add(string(rayv1.UpdatedRayCluster), "Updated the %s RayCluster %s/%s", which, cur.Namespace, cur.Name)
	}
	return nil
}

// BuildCluster is the RayCluster named name for svc: its spec, svc's
// labels and annotations, and KubeRay's association labels and spec-hash
// annotations (so a cluster KubeRay made is recognised, and the other way
// round); operatorVersion goes into ray.io/kuberay-version.
func BuildCluster(svc *rayv1.RayService, name, operatorVersion string) *rayv1.RayCluster {
	labels := make(map[string]string, len(svc.Labels)+2)
	maps.Copy(labels, svc.Labels)
	labels[rayv1.RayOriginatedFromCRNameLabelKey] = svc.Name
	labels[rayv1.RayOriginatedFromCRDLabelKey] = rayv1.RayServiceKind
	annotations := make(map[string]string, len(svc.Annotations)+3)
	maps.Copy(annotations, svc.Annotations)
	annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] = podspec.SpecHash(specForHashing(svc))
	annotations[rayv1.NumWorkerGroupsKey] = strconv.Itoa(len(svc.Spec.RayClusterSpec.WorkerGroupSpecs))
	annotations[rayv1.KubeRayVersion] = operatorVersion
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       svc.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, rayv1.RayServiceGroupVersionKind)},
		},
		Spec: *svc.Spec.RayClusterSpec.DeepCopy(),
	}
}

// specForHashing is the cluster spec whose hash tells a cluster's spec
// changed. suspend is left out: it passes to a cluster only at creation.
func specForHashing(svc *rayv1.RayService) *rayv1.RayClusterSpec {
	spec := svc.Spec.RayClusterSpec.DeepCopy()
	spec.Suspend = nil
	return spec
}

// shouldUpdateCluster: update cluster in place? Not the active one during
// an upgrade; the active one when another operator version built it; any
// when the spec is unchanged but for worker groups added at the end.
func (r *Reconciler) shouldUpdateCluster(svc *rayv1.RayService, cluster *rayv1.RayCluster, active bool) bool {
	if cluster == nil {
		return false
	}
	if active {
		if meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.UpgradeInProgress)) {
			return false
		}
		if cluster.Annotations[rayv1.KubeRayVersion] != r.cfg.Build.OperatorVersion {
			return true
		}
	}
	if specHashEqual(svc, cluster, false) {
		return false
	}
	return specHashEqual(svc, cluster, true)
}

// specHashEqual compares cluster's recorded spec hash with svc's. With
// partial, only the cluster's first worker groups count: a spec that only
// appended groups matches.
func specHashEqual(svc *rayv1.RayService, cluster *rayv1.RayCluster, partial bool) bool {
	goal := specForHashing(svc)
	if partial {
		n, err := strconv.Atoi(cluster.Annotations[rayv1.NumWorkerGroupsKey])
		if err != nil {
			// As KubeRay: a cluster whose group count is unreadable is
			// updated in place rather than replaced.
			return true
		}
		if len(goal.WorkerGroupSpecs) < n {
			return false
		}
		goal.WorkerGroupSpecs = goal.WorkerGroupSpecs[:n]
	}
	return cluster.Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey] == podspec.SpecHash(goal)
}

// shouldPrepareNewCluster: does the spec call for a new pending cluster?
// Yes for a new RayService; for a changed spec only under zero-downtime
// upgrades (NewCluster, or no strategy and ENABLE_ZERO_DOWNTIME not
// "false").
func (r *Reconciler) shouldPrepareNewCluster(svc *rayv1.RayService, active, pending *rayv1.RayCluster, pendingServing bool) bool {
	if pendingServing || meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.RollbackInProgress)) {
		return false
	}
	if active == nil && pending == nil {
		return true
	}
	cluster := pending
	if cluster == nil {
		cluster = active
	}
	if specHashEqual(svc, cluster, false) || specHashEqual(svc, cluster, true) {
		return false
	}
	return r.zeroDowntime(svc)
}

func (r *Reconciler) zeroDowntime(svc *rayv1.RayService) bool {
	if u := svc.Spec.UpgradeStrategy; u != nil && u.Type != nil {
		return *u.Type == rayv1.RayServiceNewCluster
	}
	return r.cfg.ZeroDowntime
}

// deletionSchedule is when each replaced cluster is to be deleted. It is
// kept in memory, as KubeRay's: after a restart the delay starts again.
type deletionSchedule struct {
	mu sync.Mutex
	at map[types.NamespacedName]map[string]time.Time
}

func newDeletionSchedule() *deletionSchedule {
	return &deletionSchedule{at: map[types.NamespacedName]map[string]time.Time{}}
}

func (d *deletionSchedule) get(key types.NamespacedName, cluster string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.at[key][cluster]
	return t, ok
}

func (d *deletionSchedule) set(key types.NamespacedName, cluster string, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at[key] == nil {
		d.at[key] = map[string]time.Time{}
	}
	d.at[key][cluster] = t
}

func (d *deletionSchedule) forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.at, key)
}

// handleSuspend runs spec.suspend (KubeRay v1.7.0's state machine):
// Suspending is written first; then every owned RayCluster and Service is
// deleted, whatever spec.suspend says by then; then Suspended; clearing
// spec.suspend resumes in the same pass. stop means the rest of the pass is
// skipped.
func (r *Reconciler) handleSuspend(ctx context.Context, s *scope) (stop bool, err error) {
	svc := s.Object
	st := &svc.Status
	suspending := meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceSuspending))
	suspended := meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceSuspended))
	switch {
	case suspended:
		if svc.Spec.Suspend {
			return true, nil
		}
		st.ObservedGeneration = svc.Generation
		s.setCondition(rayv1.RayServiceSuspended, metav1.ConditionFalse, rayv1.RayServiceResumed, "Spec.Suspend is false; RayService has resumed.")
		// The initializing timeout starts again for the resumed attempt.
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RayServiceReady))
		s.setCondition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceInitializing, "RayService is initializing after resuming from suspend.")
		meta.RemoveStatusCondition(&st.Conditions, string(rayv1.UpgradeInProgress))
		s.setCondition(rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.RayServiceInitializing, "RayService is initializing after resuming from suspend.")
		// Resumed: the rest of the pass runs now (a new cluster is named).
		return false, nil
	case !suspending:
		if !svc.Spec.Suspend {
			return false, nil
		}
		st.ObservedGeneration = svc.Generation
		s.setCondition(rayv1.RayServiceSuspending, metav1.ConditionTrue, rayv1.SuspendRequested, "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.")
		s.setCondition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.SuspendInProgress, "RayService is suspending.")
		s.setCondition(rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.SuspendInProgress, "No upgrade in progress.")
		s.setCondition(rayv1.RollbackInProgress, metav1.ConditionFalse, rayv1.SuspendInProgress, "No rollback in progress.")
		st.ActiveServiceStatus = rayv1.RayServiceStatus{}
		st.PendingServiceStatus = rayv1.RayServiceStatus{}
		st.NumServeEndpoints = 0
		st.ServiceStatus = rayv1.NotRunning
		s.Requeue.After(DefaultRequeue)
		return true, nil
	}
	s.Requeue.After(DefaultRequeue)
	done, err := r.deleteOwned(ctx, s)
	if err != nil {
		return true, err
	}
	if !done {
		s.setCondition(rayv1.RayServiceSuspending, metav1.ConditionTrue, rayv1.SuspendInProgress, "Waiting for all Kubernetes resources owned by this RayService to be deleted.")
		return true, nil
	}
	const gone = "All owned resources have been deleted."
	s.setCondition(rayv1.RayServiceSuspending, metav1.ConditionFalse, rayv1.SuspendComplete, gone)
	s.setCondition(rayv1.RayServiceSuspended, metav1.ConditionTrue, rayv1.SuspendComplete, gone)
	s.setCondition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.SuspendComplete, "RayService is suspended.")
	s.setCondition(rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.SuspendComplete, "No upgrade in progress.")
	s.setCondition(rayv1.RollbackInProgress, metav1.ConditionFalse, rayv1.SuspendComplete, "No rollback in progress.")
	return true, nil
}

// deleteOwned deletes the RayService's clusters and Services; done when
// none is left.
func (r *Reconciler) deleteOwned(ctx context.Context, s *scope) (bool, error) {
	svc := s.Object
	done := true
	for i := range s.clusters {
		done = false
		r.deleteCluster(ctx, s, &s.clusters[i], "the RayService is suspended")
	}
	for _, name := range []string{headServiceName(svc), serveServiceName(svc)} {
		existing, err := r.getService(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name})
		if err != nil {
			return false, err
		}
		if existing == nil || !metav1.IsControlledBy(existing, svc) {
			continue
		}
		done = false
		if existing.DeletionTimestamp != nil {
			continue
		}
		err = r.client.Delete(ctx, existing, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &existing.UID})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			r.recorder.Warning(svc, string(rayv1.FailedToDeleteService), "Failed to delete the Service %s/%s during suspend: %v", existing.Namespace, existing.Name, err)
			return false, err
		default:
			s.Events.Add(string(rayv1.DeletedService), "Deleted the Service %s/%s during suspend", existing.Namespace, existing.Name)
		}
	}
	return done, nil
}

// initializingTimeout is the ray.io/initializing-timeout annotation: a Go
// duration or whole seconds (admission checked it).
func initializingTimeout(svc *rayv1.RayService) (time.Duration, bool) {
	v := strings.TrimSpace(svc.Annotations[rayv1.RayServiceInitializingTimeoutAnnotation])
	if v == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d, true
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second, true
	}
	return 0, false
}

// initializingTimedOut: the RayService failed for good (Ready=False,
// InitializingTimeout).
func initializingTimedOut(svc *rayv1.RayService) bool {
	c := meta.FindStatusCondition(svc.Status.Conditions, string(rayv1.RayServiceReady))
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(rayv1.RayServiceInitializingTimeout)
}

// markFailedOnInitializingTimeout fails a RayService that has been
// Initializing longer than its annotation allows; its clusters are then
// cleaned up.
func (r *Reconciler) markFailedOnInitializingTimeout(s *scope) {
	svc := s.Object
	timeout, ok := initializingTimeout(svc)
	if !ok {
		return
	}
	c := meta.FindStatusCondition(svc.Status.Conditions, string(rayv1.RayServiceReady))
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(rayv1.RayServiceInitializing) {
		return
	}
	spent := s.now.Sub(c.LastTransitionTime.Time)
	if spent < timeout {
		s.Requeue.After(timeout - spent)
		return
	}
	svc.Status.ActiveServiceStatus.RayClusterName = ""
	svc.Status.PendingServiceStatus.RayClusterName = ""
	s.setCondition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceInitializingTimeout,
		"RayService failed to become ready within the configured timeout of "+timeout.String()+". Time spent initializing: "+spent.Round(time.Second).String())
	r.recorder.Warning(svc, string(rayv1.RayServiceInitializingTimeoutEvent), "RayService initializing timeout exceeded after %s (configured timeout: %s)", spent.Round(time.Second), timeout)
}
