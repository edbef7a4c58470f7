package loginset

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
)

// ConditionReady is true when every login pod of the current spec is
// available.
const ConditionReady = core.ConditionReady

// Reasons of the Ready condition; the problem reasons are also the reasons
// of the Warning event recorded when the condition turns to them.
const (
	ReasonDeploymentAvailable   = core.ReasonDeploymentAvailable
	ReasonDeploymentUnavailable = core.ReasonDeploymentUnavailable
	ReasonControllerNotFound    = core.ReasonControllerNotFound
	ReasonReferenceNotFound     = core.ReasonReferenceNotFound
	ReasonHostKeysInvalid       = "HostKeysInvalid"
	ReasonSyncFailed            = core.ReasonSyncFailed
)

// readyCondition derives Ready from the sync result and the live Deployment
// (nil when it does not exist yet).
func readyCondition(l *slinkyv1beta1.LoginSet, deploy *appsv1.Deployment, syncErr error) metav1.Condition {
	var nf *refresolver.NotFoundError
	var hk *hostKeysError
	switch {
	case syncErr == nil:
		return core.DeploymentAvailable(l, "login", deploy)
	case errors.As(syncErr, &nf) && nf.Kind != "Controller":
		// Named alone, without the step that missed it.
		return core.NotReady(l, ReasonReferenceNotFound, nf.Error())
	case nf == nil && errors.As(syncErr, &hk):
		return core.NotReady(l, ReasonHostKeysInvalid, hk.Error())
	}
	return core.Failed(l, syncErr)
}

// transitions: a Warning naming the problem when Ready turns to one (or to
// another), a Normal event when the login pods become available.
var transitions = core.Transitions{
	Warn: func(cond metav1.Condition) bool { return cond.Reason != ReasonDeploymentUnavailable },
	Note: func(cond metav1.Condition) string { return cond.Message },
}

// updateStatus writes replicas, readyReplicas, selector and the Ready
// condition when they changed.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope, syncErr error) error {
	l := s.Object
	deploy, err := core.Live(ctx, r.Client, client.ObjectKey{Namespace: l.Namespace, Name: DeploymentName(l)}, &appsv1.Deployment{})
	if err != nil {
		return err
	}
	if deploy != nil && !metav1.IsControlledBy(deploy, l) {
		deploy = nil
	}
	return core.UpdateStatus(ctx, &r.Reconciler, l, conditions, readyCondition(l, deploy, syncErr), &transitions, func(obj *slinkyv1beta1.LoginSet) {
		obj.Status.Selector = Selector(obj)
		obj.Status.Replicas, obj.Status.ReadyReplicas = 0, 0
		if deploy != nil {
			obj.Status.Replicas, obj.Status.ReadyReplicas = deploy.Status.Replicas, deploy.Status.ReadyReplicas
		}
	})
}

func conditions(l *slinkyv1beta1.LoginSet) *[]metav1.Condition { return &l.Status.Conditions }
