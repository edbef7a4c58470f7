package refwatch_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
)

// seen records the names of the Secrets whose events reached the Source.
type seen struct {
	mu    sync.Mutex
	names map[string]int
}

func (s *seen) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

// TestWatchesOnlyReferencedObjects runs a Watcher of Secrets in a manager
// against a real API server. Holders are Pods naming Secrets in their
// "refs" annotation. Only the Secrets a Pod names are watched, from when
// the first Pod names one until the last stops naming it, and their
// creation, changes and deletion reach the Source; another Secret's do
// not.
func TestWatchesOnlyReferencedObjects(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	c := env.Client
	const ns = "refwatch"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	var w *refwatch.Watcher
	holder := refwatch.Holder{Object: &corev1.Pod{}, Names: func(o client.Object) []string {
		if v := o.GetAnnotations()["refs"]; v != "" {
			return strings.Split(v, ",")
		}
		return nil
	}}
	// The manager's own cache options: holders must carry Gantry's label.
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		var err error
		if w, err = refwatch.For(mgr, &corev1.Secret{}); err != nil {
			return err
		}
		again, err := refwatch.For(mgr, &corev1.Secret{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(BeIdenticalTo(w), "one Watcher per manager and kind")
		g.Expect(w.Track(ctx, mgr.GetCache(), holder)).To(Succeed())
		return w.Track(ctx, mgr.GetCache(), holder)
	})

	events := &seen{names: map[string]int{}}
	record := handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		events.mu.Lock()
		events.names[e.Object.GetName()]++
		events.mu.Unlock()
	}}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)

	g.Expect(w.Source(record).Start(ctx, queue)).To(Succeed())

	secret := func(name, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"k": value}}
	}
	update := func(name, value string) {
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)).To(Succeed())
		s.StringData = map[string]string{"k": value}
		g.Expect(c.Update(ctx, s)).To(Succeed())
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder", Annotations: map[string]string{"refs": "a"},
			Labels: map[string]string{builder.LabelManagedBy: builder.ManagedByGantry}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}

	g.Expect(c.Create(ctx, secret("a", "1"))).To(Succeed())
	g.Expect(c.Create(ctx, secret("unrelated", "1"))).To(Succeed())
	g.Consistently(w.Watched).WithTimeout(time.Second).Should(BeEmpty(), "nothing is referenced yet")

	t.Run("a holder's reference is watched", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Create(ctx, pod)).To(Succeed())
		g.Eventually(w.Watched).Should(Equal([]types.NamespacedName{key("a")}))
		g.Eventually(func() bool { _, found, known := w.ResourceVersion(key("a")); return found && known }).Should(BeTrue())
		before := events.count("a")
		update("a", "2")
		g.Eventually(func() int { return events.count("a") }).Should(BeNumerically(">", before))
		live := &corev1.Secret{}
		g.Expect(c.Get(ctx, key("a"), live)).To(Succeed())
		g.Eventually(func() string { rv, _, _ := w.ResourceVersion(key("a")); return rv }).Should(Equal(live.ResourceVersion))
	})

	t.Run("a Secret created after it is referenced is seen", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.Annotations["refs"] = "a,b"
		g.Expect(c.Update(ctx, pod)).To(Succeed())
		g.Eventually(w.Watched).Should(Equal([]types.NamespacedName{key("a"), key("b")}))
		g.Eventually(func() bool { _, found, known := w.ResourceVersion(key("b")); return !found && known }).Should(BeTrue(),
			"a referenced Secret that does not exist is known missing")
		g.Expect(c.Create(ctx, secret("b", "1"))).To(Succeed())
		g.Eventually(func() int { return events.count("b") }).Should(BeNumerically(">", 0))
		g.Expect(c.Delete(ctx, secret("b", ""))).To(Succeed())
		g.Eventually(func() int { return events.count("b") }).Should(BeNumerically(">", 1), "the deletion is an event too")
	})

	t.Run("an unreferenced Secret is never seen", func(t *testing.T) {
		g := NewWithT(t)
		update("unrelated", "2")
		// A referenced Secret's later change arrives; the unrelated one's
		// never does.
		before := events.count("a")
		update("a", "3")
		g.Eventually(func() int { return events.count("a") }).Should(BeNumerically(">", before))
		g.Expect(events.count("unrelated")).To(BeZero())
	})

	t.Run("a Reader reads a referenced Secret once per change", func(t *testing.T) {
		g := NewWithT(t)
		reads := &countingReader{Reader: c}
		r := refwatch.NewReader(reads, c.Scheme(), w)
		live := &corev1.Secret{}
		g.Expect(c.Get(ctx, key("a"), live)).To(Succeed())
		g.Eventually(func() string { rv, _, _ := w.ResourceVersion(key("a")); return rv }).Should(Equal(live.ResourceVersion))
		get := func(name string) (string, error) {
			s := &corev1.Secret{}
			err := r.Get(ctx, key(name), s)
			return string(s.Data["k"]), err
		}

		g.Expect(get("a")).To(Equal("3"))
		g.Expect(reads.n.Load()).To(BeEquivalentTo(1))
		mine := &corev1.Secret{}
		g.Expect(r.Get(ctx, key("a"), mine)).To(Succeed())
		mine.Data["k"] = []byte("changed by the caller")
		g.Expect(get("a")).To(Equal("3"), "what is kept is not the caller's copy")
		g.Expect(reads.n.Load()).To(BeEquivalentTo(1), "unchanged: no read")

		update("a", "4")
		g.Eventually(get).WithArguments("a").Should(Equal("4"))
		g.Expect(reads.n.Load()).To(BeEquivalentTo(2), "one read for the change")

		// b was deleted. The Watcher knows, but the caller may have just
		// made it again: a missing object is always asked for.
		_, err := get("b")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "b was deleted: %v", err)
		g.Expect(reads.n.Load()).To(BeEquivalentTo(3))
		g.Expect(c.Create(ctx, secret("b", "again"))).To(Succeed())
		g.Expect(get("b")).To(Equal("again"), "created just now, before the watch saw it")

		before := reads.n.Load()
		g.Expect(get("unrelated")).To(Equal("2"))
		g.Expect(get("unrelated")).To(Equal("2"))
		g.Expect(reads.n.Load()).To(BeEquivalentTo(before+2), "what no holder references is read every time")
	})

	t.Run("a reference no holder names any more is no longer watched", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.Annotations["refs"] = "b"
		g.Expect(c.Update(ctx, pod)).To(Succeed())
		g.Eventually(w.Watched).Should(Equal([]types.NamespacedName{key("b")}))
		_, _, known := w.ResourceVersion(key("a"))
		g.Expect(known).To(BeFalse())
		g.Expect(c.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		g.Eventually(w.Watched).Should(BeEmpty(), "a deleted holder references nothing")
	})
}

// countingReader counts the Gets it passes on.
type countingReader struct {
	client.Reader
	n atomic.Int64
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.n.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}
