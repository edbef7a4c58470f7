package loginset

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/status"
)

// ConditionReady is true when every login pod of the current spec is
// available.
const ConditionReady = "Ready"

// Reasons of the Ready condition; the problem reasons are also the reasons
// of the Warning event recorded when the condition turns to them.
const (
	ReasonDeploymentAvailable   = "DeploymentAvailable"
	ReasonDeploymentUnavailable = "DeploymentUnavailable"
	ReasonControllerNotFound    = "ControllerNotFound"
	ReasonReferenceNotFound     = "ReferenceNotFound"
	ReasonHostKeysInvalid       = "HostKeysInvalid"
	ReasonSyncFailed            = "SyncFailed"
)

// readyCondition derives Ready from the sync result and the live Deployment
// (nil when it does not exist yet).
func readyCondition(l *slinkyv1beta1.LoginSet, deploy *appsv1.Deployment, syncErr error) metav1.Condition {
	cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: l.Generation}
	var nf *refresolver.NotFoundError
	var hk *hostKeysError
	switch {
	case errors.As(syncErr, &nf) && nf.Kind == "Controller":
		cond.Reason = ReasonControllerNotFound
		cond.Message = fmt.Sprintf("Controller %s/%s not found", nf.Namespace, nf.Name)
	case errors.As(syncErr, &nf):
		cond.Reason, cond.Message = ReasonReferenceNotFound, nf.Error()
	case errors.As(syncErr, &hk):
		cond.Reason, cond.Message = ReasonHostKeysInvalid, hk.Error()
	case syncErr != nil:
		cond.Reason, cond.Message = ReasonSyncFailed, syncErr.Error()
	case deploy == nil:
		cond.Reason, cond.Message = ReasonDeploymentUnavailable, "the login Deployment does not exist yet"
	default:
		desired := ptr.Deref(deploy.Spec.Replicas, 1)
		current := deploy.Status.ObservedGeneration >= deploy.Generation
		cond.Message = fmt.Sprintf("%d/%d login pods available", deploy.Status.AvailableReplicas, desired)
		if current && deploy.Status.AvailableReplicas >= desired && deploy.Status.UpdatedReplicas >= desired {
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonDeploymentAvailable
		} else {
			cond.Reason = ReasonDeploymentUnavailable
		}
	}
	return cond
}

// readyState is the part of the Ready condition an event reports.
type readyState struct {
	status          metav1.ConditionStatus
	reason, message string
}

// isProblem reports a state the user has to act on.
func (s readyState) isProblem() bool {
	switch s.reason {
	case ReasonControllerNotFound, ReasonReferenceNotFound, ReasonHostKeysInvalid, ReasonSyncFailed:
		return true
	}
	return false
}

// recordTransition records one event when the Ready condition changes: a
// Warning naming the problem when it turns to one (or to another), a Normal
// event when the login pods become available. Nothing is recorded while the
// condition stays as it was, however often the LoginSet is reconciled.
// reported keeps a reconcile that read a stale status from recording the
// same transition twice.
func recordTransition(recorder events.EventRecorder, reported *status.Reported, l *slinkyv1beta1.LoginSet, previous *readyState, next readyState) {
	if recorder == nil || (previous != nil && *previous == next) {
		return
	}
	if !reported.Changed(l.UID, metav1.Condition{Type: ConditionReady, Status: next.status, Reason: next.reason, Message: next.message}) {
		return
	}
	switch {
	case next.isProblem():
		recorder.Eventf(l, nil, corev1.EventTypeWarning, next.reason, common.ActionSync, "%s", next.message)
	case next.status == metav1.ConditionTrue && (previous == nil || previous.status != metav1.ConditionTrue):
		recorder.Eventf(l, nil, corev1.EventTypeNormal, next.reason, common.ActionSync, "%s", next.message)
	}
}
