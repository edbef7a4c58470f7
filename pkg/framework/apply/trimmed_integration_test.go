package apply

import (
	"context"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gantry-dev/gantry/test/testenv"
)

// TestApplyIfChangedTrimmed checks drift detection for a kind the cache
// holds without its spec (the manager's JobSets; a Deployment here, whose
// generation the API server moves the same way), against a real API
// server: a converged object costs no request, a spec edit by someone else
// costs one read and, when it touched a field Gantry owns, one apply, and
// a restart costs one read per object and no write.
func TestApplyIfChangedTrimmed(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var applies, reads atomic.Int32
	counting := interceptor.NewClient(base, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			applies.Add(1)
			return c.Apply(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
	})
	a := Applier{Client: counting, FieldOwner: FieldOwnerTrainer, Trimmed: NewTrimmed(counting, &appsv1.Deployment{})}

	desired := func(label string) *appsv1.Deployment {
		labels := map[string]string{"app": "trimmed"}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "trimmed", Namespace: "default", Labels: map[string]string{"team": label}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				},
			},
		}
	}
	// cached is the object as the trimming cache holds it: metadata and
	// status, no spec.
	whole := func() *appsv1.Deployment {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := base.Get(ctx, client.ObjectKey{Namespace: "default", Name: "trimmed"}, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	cached := func() *appsv1.Deployment {
		d := whole()
		d.ManagedFields = nil
		d.Spec = appsv1.DeploymentSpec{}
		return d
	}
	step := func(name string, applier Applier, obj *appsv1.Deployment, live *appsv1.Deployment, wantApplies, wantReads int32) {
		t.Helper()
		applies.Store(0)
		reads.Store(0)
		var current client.Object
		if live != nil {
			current = live
		}
		sent, err := applier.ApplyIfChanged(ctx, obj, current)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sent != (wantApplies == 1) || applies.Load() != wantApplies || reads.Load() != wantReads {
			t.Fatalf("%s: sent=%v, %d applies and %d reads, want %d and %d", name, sent, applies.Load(), reads.Load(), wantApplies, wantReads)
		}
	}
	update := func(change func(*appsv1.Deployment)) {
		t.Helper()
		d := whole()
		change(d)
		if err := base.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}

	step("create", a, desired("a"), nil, 1, 0)
	step("converged: no request", a, desired("a"), cached(), 0, 0)

	// Someone scales it: the generation moves, the whole object is read
	// once, and the replicas Gantry owns are taken back.
	update(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	step("spec drift: read and apply", a, desired("a"), cached(), 1, 1)
	if got := ptr.Deref(whole().Spec.Replicas, 0); got != 2 {
		t.Fatalf("replicas after drift correction: %d, want 2", got)
	}
	step("corrected: no request", a, desired("a"), cached(), 0, 0)

	// A spec field Gantry does not set changes: one read, no write, and
	// the new generation is remembered.
	update(func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 7 })
	step("someone else's field: read only", a, desired("a"), cached(), 0, 1)
	step("someone else's field, again: no request", a, desired("a"), cached(), 0, 0)

	// A changed desired object is applied without a read: its hash is not
	// the cached copy's.
	step("desired changed", a, desired("b"), cached(), 1, 0)
	step("desired changed, converged", a, desired("b"), cached(), 0, 0)

	// Metadata is cached whole: its drift is seen without a read.
	update(func(d *appsv1.Deployment) { d.Labels["team"] = "someone-else" })
	step("metadata drift: apply, no read", a, desired("b"), cached(), 1, 0)
	if got := whole().Labels["team"]; got != "b" {
		t.Fatalf("label after drift correction: %q", got)
	}

	// A restart forgets every generation: one read per object, no write.
	restarted := a
	restarted.Trimmed = NewTrimmed(counting, &appsv1.Deployment{})
	step("after a restart: read only", restarted, desired("b"), cached(), 0, 1)
	step("after a restart, again: no request", restarted, desired("b"), cached(), 0, 0)

	// Forget drops the object; a recreated object (new UID) is verified again.
	restarted.Trimmed.Forget(client.ObjectKey{Namespace: "default", Name: "trimmed"})
	if n := restarted.Trimmed.len(); n != 0 {
		t.Fatalf("after Forget %d objects are remembered", n)
	}
	step("forgotten: read only", restarted, desired("b"), cached(), 0, 1)

	if _, err := (Applier{Client: counting, FieldOwner: FieldOwnerTrainer, Trimmed: NewTrimmed(nil, &appsv1.Deployment{})}).
		ApplyIfChanged(ctx, desired("b"), cached()); err == nil {
		t.Fatal("an Applier with Trimmed kinds and no reader to verify them with was accepted")
	}
}

// len is how many objects t remembers.
func (t *Trimmed) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen)
}
