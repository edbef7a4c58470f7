package accounting

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
)

// ConditionReady is true when slurmdbd runs the current configuration and
// is ready (listening, which it does once it has reached its database), or
// runs outside Kubernetes.
const ConditionReady = "Ready"

// Reasons of the Ready condition; the False ones are also the reasons of
// the Warning event sent when the condition turns to them.
const (
	ReasonStatefulSetReady    = "StatefulSetReady"
	ReasonStatefulSetNotReady = "StatefulSetNotReady"
	ReasonExternal            = "External"
	// ReasonReferenceNotFound: a key, the password Secret or the JWKS
	// ConfigMap is missing.
	ReasonReferenceNotFound = "ReferenceNotFound"
	// ReasonInvalidStoragePassword: the password cannot be written to
	// slurmdbd.conf.
	ReasonInvalidStoragePassword = "InvalidStoragePassword"
	// ReasonInvalidSpec: a required field is empty (for clusters running
	// without the admission webhook, which refuses it).
	ReasonInvalidSpec = "InvalidSpec"
	ReasonSyncFailed  = "SyncFailed"
)

// errInvalidSpec marks an Accounting the webhook would have refused.
var errInvalidSpec = errors.New("invalid Accounting")

// isUserError reports an error the user must fix: a missing reference or
// an unusable spec. It is reported once, not retried with backoff; the
// watches bring the Accounting back when the user acts.
func isUserError(err error) bool {
	return err != nil && (refresolver.IsNotFound(err) || errors.Is(err, errStoragePassword) || errors.Is(err, errInvalidSpec))
}

// readyCondition derives Ready from the sync result and the live
// StatefulSet (nil when it does not exist yet). A failed sync wins: the
// StatefulSet may be ready but running an outdated configuration.
func readyCondition(a *slinkyv1beta1.Accounting, sts *appsv1.StatefulSet, syncErr error) metav1.Condition {
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: a.Generation, Status: metav1.ConditionFalse}
	switch {
	case syncErr != nil && refresolver.IsNotFound(syncErr):
		cond.Reason, cond.Message = ReasonReferenceNotFound, syncErr.Error()
	case errors.Is(syncErr, errStoragePassword):
		cond.Reason, cond.Message = ReasonInvalidStoragePassword, syncErr.Error()
	case errors.Is(syncErr, errInvalidSpec):
		cond.Reason, cond.Message = ReasonInvalidSpec, syncErr.Error()
	case syncErr != nil:
		cond.Reason, cond.Message = ReasonSyncFailed, syncErr.Error()
	case a.Spec.External:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonExternal
		if ext := a.Spec.ExternalConfig; ext != nil {
			cond.Message = fmt.Sprintf("slurmdbd runs outside Kubernetes at %s:%d", ext.Host, ext.Port)
		}
	case sts == nil:
		cond.Reason, cond.Message = ReasonStatefulSetNotReady, "the slurmdbd StatefulSet does not exist yet"
	default:
		desired := ptr.Deref(sts.Spec.Replicas, 1)
		current := sts.Status.ObservedGeneration >= sts.Generation
		ready := current && sts.Status.ReadyReplicas >= desired && sts.Status.UpdatedReplicas >= desired
		cond.Message = fmt.Sprintf("%d/%d slurmdbd pods ready", sts.Status.ReadyReplicas, desired)
		if ready {
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonStatefulSetReady
		} else {
			cond.Reason = ReasonStatefulSetNotReady
			if !current {
				cond.Message += " (rollout of the current spec not yet observed)"
			}
		}
	}
	return cond
}
