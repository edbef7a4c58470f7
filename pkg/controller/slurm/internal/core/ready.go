package core

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/status"
)

// ConditionReady is every kind's summary condition.
const ConditionReady = "Ready"

// Reasons of the Ready conditions the kinds share.
const (
	ReasonStatefulSetReady      = "StatefulSetReady"
	ReasonStatefulSetNotReady   = "StatefulSetNotReady"
	ReasonDeploymentAvailable   = "DeploymentAvailable"
	ReasonDeploymentUnavailable = "DeploymentUnavailable"
	ReasonExternal              = "External"
	ReasonControllerNotFound    = "ControllerNotFound"
	ReasonReferenceNotFound     = "ReferenceNotFound"
	ReasonSyncFailed            = "SyncFailed"
)

// NotReady is a False Ready condition of obj.
func NotReady(obj client.Object, reason, message string) metav1.Condition {
	return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: obj.GetGeneration(),
		Reason: reason, Message: message}
}

// Failed is Ready after a failed sync: ControllerNotFound when the
// referenced Controller is missing, ReferenceNotFound with the error's
// message when another reference is, SyncFailed otherwise. A failed sync
// wins over a ready workload, which may run an outdated configuration.
func Failed(obj client.Object, syncErr error) metav1.Condition {
	var nf *refresolver.NotFoundError
	switch {
	case errors.As(syncErr, &nf) && nf.Kind == "Controller":
		return NotReady(obj, ReasonControllerNotFound, fmt.Sprintf("Controller %s/%s not found", nf.Namespace, nf.Name))
	case refresolver.IsNotFound(syncErr):
		return NotReady(obj, ReasonReferenceNotFound, syncErr.Error())
	}
	return NotReady(obj, ReasonSyncFailed, syncErr.Error())
}

// External is Ready of obj whose app runs outside Kubernetes at ext.
func External(obj client.Object, app string, ext *slinkyv1beta1.ExternalConfig) metav1.Condition {
	cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: obj.GetGeneration(), Reason: ReasonExternal}
	if ext != nil {
		cond.Message = fmt.Sprintf("%s runs outside Kubernetes at %s:%d", app, ext.Host, ext.Port)
	}
	return cond
}

// StatefulSetReady is Ready of obj whose app runs in sts (nil while it
// does not exist): True once every pod of the current spec is ready.
func StatefulSetReady(obj client.Object, app string, sts *appsv1.StatefulSet) metav1.Condition {
	if sts == nil {
		return NotReady(obj, ReasonStatefulSetNotReady, "the "+app+" StatefulSet does not exist yet")
	}
	desired := ptr.Deref(sts.Spec.Replicas, 1)
	current := sts.Status.ObservedGeneration >= sts.Generation
	cond := NotReady(obj, ReasonStatefulSetNotReady, fmt.Sprintf("%d/%d %s pods ready", sts.Status.ReadyReplicas, desired, app))
	switch {
	case !current:
		cond.Message += " (rollout of the current spec not yet observed)"
	case sts.Status.ReadyReplicas >= desired && sts.Status.UpdatedReplicas >= desired:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonStatefulSetReady
	}
	return cond
}

// DeploymentAvailable is Ready of obj whose pods run in d (nil while it
// does not exist; what names them in messages): True once every replica of
// the current spec is available.
func DeploymentAvailable(obj client.Object, pods string, d *appsv1.Deployment) metav1.Condition {
	if d == nil {
		return NotReady(obj, ReasonDeploymentUnavailable, "the "+pods+" Deployment does not exist yet")
	}
	desired := ptr.Deref(d.Spec.Replicas, 1)
	cond := NotReady(obj, ReasonDeploymentUnavailable, fmt.Sprintf("%d/%d %s pods available", d.Status.AvailableReplicas, desired, pods))
	if d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas >= desired && d.Status.UpdatedReplicas >= desired {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonDeploymentAvailable
	}
	return cond
}

// Live reads the object key names into obj and returns it, or nil when it
// does not exist.
func Live[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T) (T, error) {
	var none T
	switch err := c.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		return none, nil
	case err != nil:
		return none, err
	}
	return obj, nil
}

// LiveStatefulSet is the StatefulSet name in obj's namespace, nil when it
// does not exist or obj's workload runs outside Kubernetes (external),
// where none is made.
func (r *Reconciler) LiveStatefulSet(ctx context.Context, obj client.Object, name string, external bool) (*appsv1.StatefulSet, error) {
	if external {
		return nil, nil
	}
	return Live(ctx, r.Client, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, &appsv1.StatefulSet{})
}

// Transitions say which changes of Ready are worth an event.
type Transitions struct {
	// Warn reports a False Ready the user must act on: Ready turning to it
	// is recorded as a Warning with its reason and message.
	Warn func(cond metav1.Condition) bool
	// Note, when set, is the message of the Normal event recorded when
	// Ready turns True.
	Note func(cond metav1.Condition) string
}

// RecordTransition records at most one event for Ready's change from
// previous (nil: none) to cond, as t says. A reconcile that finds the same
// state records nothing, however often it runs.
func (r *Reconciler) RecordTransition(obj client.Object, previous *metav1.Condition, cond metav1.Condition, t Transitions) {
	if previous != nil && previous.Status == cond.Status && previous.Reason == cond.Reason && previous.Message == cond.Message {
		return
	}
	if !r.Reported.Changed(obj.GetUID(), cond) {
		// This transition's event is out; the status read was stale.
		return
	}
	switch {
	case cond.Status == metav1.ConditionTrue && t.Note != nil && (previous == nil || previous.Status != metav1.ConditionTrue):
		r.Recorder.Normal(obj, cond.Reason, "%s", t.Note(cond))
	case cond.Status == metav1.ConditionFalse && t.Warn != nil && t.Warn(cond):
		r.Recorder.Warning(obj, cond.Reason, "%s", cond.Message)
	}
}

// UpdateStatus writes obj's status when it changed: cond as the Ready
// condition among conditions(obj), and whatever set (nil: nothing) sets
// besides. Once it is written, the event of Ready's transition is recorded
// as t says (nil: none).
func UpdateStatus[T client.Object](ctx context.Context, r *Reconciler, obj T, conditions func(T) *[]metav1.Condition,
	cond metav1.Condition, t *Transitions, set func(T)) error {
	previous := meta.FindStatusCondition(*conditions(obj), cond.Type)
	if previous != nil {
		previous = previous.DeepCopy()
	}
	_, err := status.Update(ctx, r.Client, obj, func(o T) error {
		meta.SetStatusCondition(conditions(o), cond)
		if set != nil {
			set(o)
		}
		return nil
	})
	if err == nil && t != nil {
		r.RecordTransition(obj, previous, cond, *t)
	}
	return err
}
