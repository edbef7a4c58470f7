package rayservice

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// sync is one pass of a RayService's flow, KubeRay v1.7.0's
// (rayservice_controller.go Reconcile):
//
//	replaced clusters deleted after their delay → validation (an invalid
//	RayService stops here, after the cleanup) → spec.suspend →
//	(a timed-out initialization stops here) → the pending cluster created,
//	clusters updated in place when only worker groups were added → the
//	heads' ray.io/serve label from their Serve proxy's health → Serve
//	applications applied (to the pending cluster if there is one, else the
//	active one) → the head and Serve Services pointed at the ready cluster
//	(the pending one as soon as it is ready: the switch) → status: the
//	promotion, a new pending cluster when the spec changed, endpoints,
//	conditions.
func (r *Reconciler) sync(ctx context.Context, s *scope) error {
	svc := s.Object
	r.serveConfigs.prune(keyOf(svc), svc.Status.ActiveServiceStatus.RayClusterName, svc.Status.PendingServiceStatus.RayClusterName)
	toClean, err := r.cleanUpClusters(ctx, s)
	if err != nil {
		return err
	}
	if err := r.validate(s); err != nil {
		// KubeRay returns without a requeue, so a replaced cluster it
		// has just scheduled waits for the next event; Gantry looks again
		// while one is left, as after an initializing timeout.
		if toClean {
			s.Requeue.After(DefaultRequeue)
		}
		return err
	}
	if stop, err := r.handleSuspend(ctx, s); err != nil || stop {
		return err
	}
	if initializingTimedOut(svc) {
		// A terminal failure: only the cleanup above runs; the user
		// deletes and recreates the RayService.
		if toClean {
			s.Requeue.After(DefaultRequeue)
		}
		return nil
	}
	s.Requeue.After(DefaultRequeue)
	if err := r.reconcileClusters(ctx, s); err != nil {
		return err
	}
	for _, c := range []*rayv1.RayCluster{s.active, s.pending} {
		if err := r.updateHeadServeLabel(ctx, s, c); err != nil {
			return err
		}
	}

	var activeReady, pendingReady bool
	var activeApps, pendingApps map[string]rayv1.AppStatus
	if s.pending != nil {
		if pendingReady, pendingApps, err = r.reconcileServe(ctx, s, s.pending); err != nil {
			return err
		}
	}
	if s.active != nil && s.pending == nil && !r.shouldPrepareNewCluster(svc, s.active, nil, false) {
		// During an upgrade the active cluster's Serve config is left
		// alone, and so is its application status.
		if activeReady, activeApps, err = r.reconcileServe(ctx, s, s.active); err != nil {
			return err
		}
	}

	var headSvc, serveSvc *corev1.Service
	if pendingReady || activeReady {
		target := s.active
		if pendingReady {
			// The switch: the pending cluster serves every application, so
			// the Services move to it in one update each.
			target = s.pending
		}
		if headSvc, serveSvc, err = r.reconcileServices(ctx, s, target); err != nil {
			return err
		}
	}
	return r.calculateStatus(ctx, s, headSvc, serveSvc, activeApps, pendingApps)
}

// calculateStatus computes the status from what this pass saw (KubeRay's
// calculateStatus, without the incremental upgrade).
func (r *Reconciler) calculateStatus(ctx context.Context, s *scope, headSvc, serveSvc *corev1.Service, activeApps, pendingApps map[string]rayv1.AppStatus) error {
	svc := s.Object
	st := &svc.Status
	st.ObservedGeneration = svc.Generation
	st.ActiveServiceStatus.RayClusterStatus = rayv1.RayClusterStatus{}
	if s.active != nil {
		st.ActiveServiceStatus.RayClusterStatus = s.active.Status
	}
	st.PendingServiceStatus.RayClusterStatus = rayv1.RayClusterStatus{}
	if s.pending != nil {
		st.PendingServiceStatus.RayClusterStatus = s.pending.Status
	}
	st.ActiveServiceStatus.Applications = activeApps
	st.PendingServiceStatus.Applications = pendingApps

	pendingServing := false
	if headSvc != nil && serveSvc != nil {
		pointsTo := headSvc.Spec.Selector[rayv1.RayClusterLabelKey]
		if serveTo := serveSvc.Spec.Selector[rayv1.RayClusterLabelKey]; serveTo != pointsTo {
			return fmt.Errorf("the head Service selects RayCluster %q and the Serve Service %q", pointsTo, serveTo)
		}
		pendingName, activeName := st.PendingServiceStatus.RayClusterName, st.ActiveServiceStatus.RayClusterName
		if pointsTo != pendingName && pointsTo != activeName {
			return fmt.Errorf("the Services select RayCluster %q, which is neither the active (%q) nor the pending (%q) one", pointsTo, activeName, pendingName)
		}
		if activeName != pointsTo {
			ctrl.LoggerFrom(ctx).Info("promoting the pending RayCluster to active", "old", activeName, "new", pendingName)
			st.ActiveServiceStatus = st.PendingServiceStatus
			st.PendingServiceStatus = rayv1.RayServiceStatus{}
		}
		pendingServing = pointsTo == pendingName
	}
	if r.shouldPrepareNewCluster(svc, s.active, s.pending, pendingServing) {
		st.PendingServiceStatus = rayv1.RayServiceStatus{RayClusterName: generateClusterName(svc.Name)}
		ctrl.LoggerFrom(ctx).Info("preparing a new pending RayCluster", "cluster", st.PendingServiceStatus.RayClusterName)
	}

	n, err := r.countServeEndpoints(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: serveServiceName(svc)}, s.observed.NumServeEndpoints)
	if err != nil {
		return err
	}
	st.NumServeEndpoints = n
	r.calculateConditions(s)
	st.ServiceStatus = rayv1.NotRunning
	if meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceReady)) {
		st.ServiceStatus = rayv1.Running
	}
	return nil
}

// calculateConditions sets Ready from the Serve endpoints (or the
// initializing timeout) and UpgradeInProgress from the clusters.
func (r *Reconciler) calculateConditions(s *scope) {
	svc := s.Object
	st := &svc.Status
	if len(st.Conditions) == 0 {
		const msg = "RayService is initializing"
		s.setCondition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceInitializing, msg)
		s.setCondition(rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.RayServiceInitializing, msg)
	}
	switch {
	case st.NumServeEndpoints > 0:
		s.setCondition(rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints, "Number of serve endpoints is greater than 0")
	case meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayServiceReady)):
		s.setCondition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.ZeroServeEndpoints, "Number of serve endpoints dropped to 0")
	default:
		r.markFailedOnInitializingTimeout(s)
	}
	active, pending := st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName
	switch {
	case active != "" && pending != "":
		s.setCondition(rayv1.UpgradeInProgress, metav1.ConditionTrue, rayv1.BothActivePendingClustersExist, "Both active and pending Ray clusters exist")
	case active != "":
		s.setCondition(rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.NoPendingCluster, "Active Ray cluster exists and no pending Ray cluster")
	default:
		c := meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeInProgress))
		if c == nil || (c.Reason != string(rayv1.RayServiceInitializing) && c.Reason != string(rayv1.RayServiceInitializingTimeout)) {
			s.setCondition(rayv1.UpgradeInProgress, metav1.ConditionUnknown, rayv1.NoActiveCluster, "No active Ray cluster exists, and the RayService is not initializing")
		}
	}
}

// setCondition sets one condition, stamped with the generation the status
// is computed for and this reconcile's clock.
func (s *scope) setCondition(t rayv1.RayServiceConditionType, status metav1.ConditionStatus, reason rayv1.RayServiceConditionReason, message string) {
	svc := s.Object
	meta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{
		Type:               string(t),
		Status:             status,
		Reason:             string(reason),
		Message:            message,
		ObservedGeneration: svc.Status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(s.now),
	})
}

func keyOf(svc *rayv1.RayService) types.NamespacedName {
	return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
}
