package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
)

// ConditionReady is true when slurmctld runs the current configuration and
// is ready (or runs outside Kubernetes).
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	ReasonStatefulSetReady    = "StatefulSetReady"
	ReasonStatefulSetNotReady = "StatefulSetNotReady"
	ReasonExternal            = "External"
	ReasonReferenceNotFound   = "ReferenceNotFound"
	ReasonSyncFailed          = "SyncFailed"
)

// readyCondition derives Ready from the sync result and the live
// StatefulSet (nil when it does not exist yet). A failed sync wins: the
// StatefulSet may be ready but running an outdated configuration.
func readyCondition(c *slinkyv1beta1.Controller, sts *appsv1.StatefulSet, syncErr error) metav1.Condition {
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: c.Generation}
	switch {
	case syncErr != nil && refresolver.IsNotFound(syncErr):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonReferenceNotFound, syncErr.Error()
	case syncErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonSyncFailed, syncErr.Error()
	case c.Spec.External:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonExternal
		if ext := c.Spec.ExternalConfig; ext != nil {
			cond.Message = fmt.Sprintf("slurmctld runs outside Kubernetes at %s:%d", ext.Host, ext.Port)
		}
	case sts == nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonStatefulSetNotReady, "the slurmctld StatefulSet does not exist yet"
	default:
		desired := ptr.Deref(sts.Spec.Replicas, 1)
		current := sts.Status.ObservedGeneration >= sts.Generation
		ready := current && sts.Status.ReadyReplicas >= desired && sts.Status.UpdatedReplicas >= desired
		cond.Message = fmt.Sprintf("%d/%d slurmctld pods ready", sts.Status.ReadyReplicas, desired)
		if ready {
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonStatefulSetReady
		} else {
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonStatefulSetNotReady
			if !current {
				cond.Message += " (rollout of the current spec not yet observed)"
			}
		}
	}
	return cond
}
