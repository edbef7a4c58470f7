package restapi

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
)

// ConditionReady is true when every slurmrestd replica of the current spec
// is available.
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	ReasonDeploymentAvailable   = "DeploymentAvailable"
	ReasonDeploymentUnavailable = "DeploymentUnavailable"
	ReasonControllerNotFound    = "ControllerNotFound"
	ReasonReferenceNotFound     = "ReferenceNotFound"
	ReasonSyncFailed            = "SyncFailed"
)

// readyCondition derives Ready from the sync result and the live Deployment
// (nil when it does not exist yet).
func readyCondition(ra *slinkyv1beta1.RestApi, deploy *appsv1.Deployment, syncErr error) metav1.Condition {
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: ra.Generation}
	var nf *refresolver.NotFoundError
	switch {
	case errors.As(syncErr, &nf) && nf.Kind == "Controller":
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonControllerNotFound
		cond.Message = fmt.Sprintf("Controller %s/%s not found", nf.Namespace, nf.Name)
	case syncErr != nil && refresolver.IsNotFound(syncErr):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonReferenceNotFound, syncErr.Error()
	case syncErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonSyncFailed, syncErr.Error()
	case deploy == nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonDeploymentUnavailable, "the slurmrestd Deployment does not exist yet"
	default:
		desired := ptr.Deref(deploy.Spec.Replicas, 1)
		current := deploy.Status.ObservedGeneration >= deploy.Generation
		available := current && deploy.Status.AvailableReplicas >= desired && deploy.Status.UpdatedReplicas >= desired
		cond.Message = fmt.Sprintf("%d/%d slurmrestd pods available", deploy.Status.AvailableReplicas, desired)
		if available {
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonDeploymentAvailable
		} else {
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonDeploymentUnavailable
		}
	}
	return cond
}
