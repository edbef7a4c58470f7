package rayservice

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	"github.com/gantry-dev/gantry/pkg/framework/status"
)

// errStale: the RayService changed since it was read; the status computed
// from the old one is dropped and the reconcile runs again.
var errStale = errors.New("the RayService changed while it was reconciled")

const staleRequeue = 100 * time.Millisecond

// Status writes the status the pass computed, once: for an invalid
// RayService, Ready=False (ValidationFailed); after a failed step,
// nothing. As KubeRay, a write happens only when a field a user or the
// flow keys on changed (statusChanged).
func (r *Reconciler) Status(ctx context.Context, s *scope, err error) error {
	svc := s.Object
	var verr *validation.RayServiceValidationError
	switch {
	case errors.As(err, &verr):
		s.setCondition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceValidationFailed, verr.Error())
	case err != nil || s.hold:
		return nil
	}
	if !statusChanged(&s.observed, &svc.Status) {
		return nil
	}
	svc.Status.LastUpdateTime = &metav1.Time{Time: s.now}
	desired := svc.Status
	rv := svc.ResourceVersion
	svc.Status = s.observed
	_, werr := status.Update(ctx, r.client, svc, func(o *rayv1.RayService) error {
		if o.ResourceVersion != rv {
			return errStale
		}
		o.Status = desired
		return nil
	}, status.WithEqual(func(_, _ *rayv1.RayService) bool { return false }))
	if errors.Is(werr, errStale) {
		ctrl.LoggerFrom(ctx).V(1).Info("RayService changed during the reconcile; its status is computed again")
		s.Requeue.After(staleRequeue)
		return nil
	}
	if werr != nil {
		return werr
	}
	if r.metrics != nil {
		r.metrics.Set(svc)
	}
	return nil
}

// statusChanged is KubeRay's InconsistentRayServiceStatuses: the service
// status, the endpoint count, the conditions, or either cluster's name or
// Serve applications changed. The clusters' own status rides along.
func statusChanged(old, updated *rayv1.RayServiceStatuses) bool {
	if old.ServiceStatus != updated.ServiceStatus || old.NumServeEndpoints != updated.NumServeEndpoints {
		return true
	}
	if !conditionsEqual(old.Conditions, updated.Conditions) {
		return true
	}
	return serviceStatusChanged(&old.ActiveServiceStatus, &updated.ActiveServiceStatus) ||
		serviceStatusChanged(&old.PendingServiceStatus, &updated.PendingServiceStatus)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}

func serviceStatusChanged(old, updated *rayv1.RayServiceStatus) bool {
	if old.RayClusterName != updated.RayClusterName || len(old.Applications) != len(updated.Applications) {
		return true
	}
	for name, app := range updated.Applications {
		was, ok := old.Applications[name]
		if !ok || was.Status != app.Status || was.Message != app.Message || len(was.Deployments) != len(app.Deployments) {
			return true
		}
		for dname, d := range app.Deployments {
			w, ok := was.Deployments[dname]
			if !ok || w.Status != d.Status || w.Message != d.Message {
				return true
			}
		}
	}
	return false
}
