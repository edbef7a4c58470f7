package workload

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// CoalesceUpdates passes a child object's create, delete and generic
// events to next as they come, and its update events delay later: the
// owner is enqueued once the delay has passed, and every further update
// of its children within it (the Pods of one cluster scheduled and
// becoming Ready one after another) joins that one reconcile instead of
// each starting its own, with its own status write. A key waiting in the
// queue is never delayed further by a later event: the workqueue keeps
// the soonest time.
//
// Creates and deletes stay immediate: they settle the expectations of the
// reconcile that made or removed the object, which waits for them.
func CoalesceUpdates(next handler.EventHandler, delay time.Duration) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: next.Create,
		UpdateFunc: func(ctx context.Context, ev event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			next.Update(ctx, ev, delayedQueue{TypedRateLimitingInterface: q, delay: delay})
		},
		DeleteFunc:  next.Delete,
		GenericFunc: next.Generic,
	}
}

// delayedQueue turns Add into AddAfter(delay).
type delayedQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	delay time.Duration
}

func (q delayedQueue) Add(req reconcile.Request) { q.AddAfter(req, q.delay) }
