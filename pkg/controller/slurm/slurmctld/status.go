package slurmctld

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
)

// ConditionReady is true when slurmctld runs the current configuration and
// is ready (or runs outside Kubernetes).
const ConditionReady = core.ConditionReady

// Reasons of the Ready condition.
const (
	ReasonStatefulSetReady    = core.ReasonStatefulSetReady
	ReasonStatefulSetNotReady = core.ReasonStatefulSetNotReady
	ReasonExternal            = core.ReasonExternal
	ReasonReferenceNotFound   = core.ReasonReferenceNotFound
	ReasonSyncFailed          = core.ReasonSyncFailed
)

// readyCondition derives Ready from the sync result and the live
// StatefulSet (nil when it does not exist yet). A failed sync wins: the
// StatefulSet may be ready but running an outdated configuration.
func readyCondition(c *slinkyv1beta1.Controller, sts *appsv1.StatefulSet, syncErr error) metav1.Condition {
	switch {
	case syncErr != nil:
		return core.Failed(c, syncErr)
	case c.Spec.External:
		return core.External(c, "slurmctld", c.Spec.ExternalConfig)
	}
	return core.StatefulSetReady(c, "slurmctld", sts)
}
