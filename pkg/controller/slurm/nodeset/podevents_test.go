package nodeset

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// A pod created or deleted wakes its NodeSet at once; the other changes
// of a pod wait up to the batch, and the changes of many pods within it
// are one reconcile.
func TestPodEventsBatchUpdatesOnly(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clk})
	defer q.ShutDown()
	h := podEvents(time.Second)
	ctx := context.Background()
	pod := func(name string) *corev1.Pod {
		isController := true
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: slinkyv1beta1.NodeSetKind, Name: "ns1", UID: "u", Controller: &isController}}}}
	}
	want := reconcile.Request{}
	want.Namespace, want.Name = "ns", "ns1"
	take := func(step string) {
		t.Helper()
		if q.Len() != 1 {
			t.Fatalf("%s: %d NodeSets queued, want 1", step, q.Len())
		}
		got, _ := q.Get()
		if got != want {
			t.Fatalf("%s: queued %v, want %v", step, got, want)
		}
		q.Done(got)
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for q.Len() != n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}

	h.Create(ctx, event.CreateEvent{Object: pod("a-0")}, q)
	take("create")

	for _, name := range []string{"a-0", "a-1", "a-2"} {
		old, cur := pod(name), pod(name)
		cur.Status.Phase = corev1.PodRunning
		h.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: cur}, q)
	}
	if q.Len() != 0 {
		t.Fatalf("updates queued the NodeSet before the batch ended (%d)", q.Len())
	}
	clk.Step(999 * time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if q.Len() != 0 {
		t.Fatalf("updates queued the NodeSet before the batch ended (%d)", q.Len())
	}
	clk.Step(time.Millisecond)
	waitFor(1)
	take("three updates in one batch")

	h.Delete(ctx, event.DeleteEvent{Object: pod("a-1")}, q)
	take("delete")
}
