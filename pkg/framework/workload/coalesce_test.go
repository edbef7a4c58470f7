package workload

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingQueue records what a handler asks of the queue.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []reconcile.Request
	after []time.Duration
}

func (q *recordingQueue) Add(r reconcile.Request) { q.added = append(q.added, r) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.added = append(q.added, r)
	q.after = append(q.after, d)
}

func TestCoalesceUpdatesDelaysOnlyUpdates(t *testing.T) {
	owner := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "rc"}}
	next := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{owner}
	})
	h := CoalesceUpdates(next, 700*time.Millisecond)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	ctx := context.Background()

	for _, tc := range []struct {
		name      string
		send      func(q workqueue.TypedRateLimitingInterface[reconcile.Request])
		wantAfter []time.Duration
	}{
		{"create", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: pod}, q)
		}, nil},
		{"delete", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: pod}, q)
		}, nil},
		{"generic", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, event.GenericEvent{Object: pod}, q)
		}, nil},
		{"update", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: pod, ObjectNew: pod}, q)
		}, []time.Duration{700 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &recordingQueue{}
			tc.send(q)
			if len(q.added) != 1 || q.added[0] != owner {
				t.Fatalf("enqueued %v, want the owner once", q.added)
			}
			if len(q.after) != len(tc.wantAfter) || (len(q.after) == 1 && q.after[0] != tc.wantAfter[0]) {
				t.Fatalf("delays %v, want %v", q.after, tc.wantAfter)
			}
		})
	}
}

// TestCoalescedUpdatesReconcileOnce: updates of one owner's children within
// the delay, on a real workqueue, bring one reconcile request.
func TestCoalescedUpdatesReconcileOnce(t *testing.T) {
	owner := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "rc"}}
	next := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{owner}
	})
	h := CoalesceUpdates(next, 2*time.Second)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for range 4 {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod, ObjectNew: pod}, q)
	}
	if q.Len() != 0 {
		t.Fatalf("%d requests queued before the delay passed, want none", q.Len())
	}
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if q.Len() != 1 {
		t.Fatalf("%d requests queued after the delay, want 1", q.Len())
	}
	got, _ := q.Get()
	if got != owner {
		t.Fatalf("got %v, want %v", got, owner)
	}
}
