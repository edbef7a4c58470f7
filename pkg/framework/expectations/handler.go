package expectations

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// OwnerFunc maps a pod (or any owned object) to the owner key and group its
// expectations are kept under; ok is false for objects the controller does
// not track.
type OwnerFunc func(obj client.Object) (key, group string, ok bool)

// Handler returns an event handler that feeds the store from pod events and
// then passes each event on to next (typically the handler that enqueues the
// owner). Observing before enqueueing matters: were the two separate
// handlers, the owner's reconcile could run before its expectation is
// observed, find it unsatisfied, and then never be woken again until the TTL.
//
// A pod counts as deleted as soon as it carries a deletion timestamp, because
// from then on it no longer counts towards the desired replicas.
func (e *Expectations) Handler(owner OwnerFunc, next handler.EventHandler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, ev event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if key, group, ok := owner(ev.Object); ok {
				e.CreationObserved(key, group, ev.Object.GetUID())
				if ev.Object.GetDeletionTimestamp() != nil {
					e.DeletionObserved(key, group, ev.Object.GetUID())
				}
			}
			if next != nil {
				next.Create(ctx, ev, q)
			}
		},
		UpdateFunc: func(ctx context.Context, ev event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if ev.ObjectNew.GetDeletionTimestamp() != nil && ev.ObjectOld.GetDeletionTimestamp() == nil {
				if key, group, ok := owner(ev.ObjectNew); ok {
					e.DeletionObserved(key, group, ev.ObjectNew.GetUID())
				}
			}
			if next != nil {
				next.Update(ctx, ev, q)
			}
		},
		DeleteFunc: func(ctx context.Context, ev event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if key, group, ok := owner(ev.Object); ok {
				e.DeletionObserved(key, group, ev.Object.GetUID())
			}
			if next != nil {
				next.Delete(ctx, ev, q)
			}
		},
		GenericFunc: func(ctx context.Context, ev event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if next != nil {
				next.Generic(ctx, ev, q)
			}
		},
	}
}

// LabelOwner builds an OwnerFunc from two labels the controller puts on its
// pods: one naming the owner (in the pod's namespace) and one naming the
// group. Pods missing either label are not tracked.
func LabelOwner(ownerLabel, groupLabel string) OwnerFunc {
	return func(obj client.Object) (string, string, bool) {
		labels := obj.GetLabels()
		name, group := labels[ownerLabel], labels[groupLabel]
		if name == "" || group == "" {
			return "", "", false
		}
		return client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}.String(), group, true
	}
}
