package accounting

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
)

// ConditionReady is true when slurmdbd runs the current configuration and
// is ready (listening, which it does once it has reached its database), or
// runs outside Kubernetes.
const ConditionReady = core.ConditionReady

// Reasons of the Ready condition; the False ones are also the reasons of
// the Warning event sent when the condition turns to them.
const (
	ReasonStatefulSetReady    = core.ReasonStatefulSetReady
	ReasonStatefulSetNotReady = core.ReasonStatefulSetNotReady
	ReasonExternal            = core.ReasonExternal
	// ReasonReferenceNotFound: a key, the password Secret or the JWKS
	// ConfigMap is missing.
	ReasonReferenceNotFound = core.ReasonReferenceNotFound
	// ReasonInvalidStoragePassword: the password cannot be written to
	// slurmdbd.conf.
	ReasonInvalidStoragePassword = "InvalidStoragePassword"
	// ReasonInvalidSpec: a required field is empty (for clusters running
	// without the admission webhook, which refuses it).
	ReasonInvalidSpec = "InvalidSpec"
	ReasonSyncFailed  = core.ReasonSyncFailed
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
	switch {
	case errors.Is(syncErr, errStoragePassword) && !refresolver.IsNotFound(syncErr):
		return core.NotReady(a, ReasonInvalidStoragePassword, syncErr.Error())
	case errors.Is(syncErr, errInvalidSpec) && !refresolver.IsNotFound(syncErr):
		return core.NotReady(a, ReasonInvalidSpec, syncErr.Error())
	case syncErr != nil:
		return core.Failed(a, syncErr)
	case a.Spec.External:
		return core.External(a, "slurmdbd", a.Spec.ExternalConfig)
	}
	return core.StatefulSetReady(a, "slurmdbd", sts)
}

// transitions: a Warning naming what the user must fix when Ready turns
// False for a reason other than a pod still starting, a Normal event when
// it turns True.
var transitions = core.Transitions{
	Warn: func(cond metav1.Condition) bool { return cond.Reason != ReasonStatefulSetNotReady },
	Note: func(cond metav1.Condition) string {
		if cond.Message == "" {
			return "slurmdbd is ready"
		}
		return "slurmdbd is ready: " + cond.Message
	},
}

// updateStatus writes the Ready condition when it changed.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope, syncErr error) error {
	a := s.Object
	sts, err := r.LiveStatefulSet(ctx, a, slinky.AccountingName(a.Name), a.Spec.External)
	if err != nil {
		return err
	}
	return core.UpdateStatus(ctx, &r.Reconciler, a, conditions, readyCondition(a, sts, syncErr), &transitions, nil)
}

func conditions(a *slinkyv1beta1.Accounting) *[]metav1.Condition { return &a.Status.Conditions }
