package nodeset

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
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
	g := gomega.NewWithT(t)

	h.Create(ctx, event.CreateEvent{Object: pod("a-0")}, q)
	take("create")

	for _, name := range []string{"a-0", "a-1", "a-2"} {
		old, cur := pod(name), pod(name)
		cur.Status.Phase = corev1.PodRunning
		h.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: cur}, q)
	}
	g.Expect(q.Len()).To(gomega.BeZero(), "updates queued the NodeSet before the batch ended")
	clk.Step(999 * time.Millisecond)
	// The queue moves a waiting item on its own goroutine: give it the
	// chance to do so early.
	g.Consistently(q.Len, 50*time.Millisecond, 5*time.Millisecond).Should(gomega.BeZero(), "updates queued the NodeSet before the batch ended")
	clk.Step(time.Millisecond)
	// The batch has ended. Time keeps moving while we wait: the queue's
	// goroutine reads the fake clock and then sets a timer from it, and a
	// step between the two leaves that timer in the future for good.
	g.Eventually(func() int {
		clk.Step(time.Millisecond)
		return q.Len()
	}, 5*time.Second, 5*time.Millisecond).Should(gomega.Equal(1), "the batch ended and the NodeSet was not queued")
	take("three updates in one batch")

	h.Delete(ctx, event.DeleteEvent{Object: pod("a-1")}, q)
	take("delete")
}
