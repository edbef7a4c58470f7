package apply

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/test/testenv"
)

// TestEnsureAgainstAPIServer: created, then unchanged without a request,
// updated on a change, and refused when another controller owns the object.
func TestEnsureAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	writes := &testenv.WriteCounter{}
	a := Applier{Client: writes.Client(base), FieldOwner: FieldOwnerRayCluster}

	owner := func(uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "rc", UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	desired := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", OwnerReferences: owner("uid-1")},
			Data:       map[string]string{"k": data},
		}
	}
	steps := []struct {
		name       string
		obj        *corev1.ConfigMap
		want       Result
		wantWrites int64
		wantLive   bool
	}{
		{"missing object is created", desired("a"), Created, 1, false},
		{"matching object sends nothing", desired("a"), Unchanged, 1, true},
		{"changed object is applied", desired("b"), Updated, 2, true},
	}
	for _, s := range steps {
		got, live, err := a.Ensure(ctx, s.obj)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got != s.want || writes.Total() != s.wantWrites || (live != nil) != s.wantLive {
			t.Fatalf("%s: %s with %d writes, live %v; want %s with %d, live %v", s.name, got, writes.Total(), live != nil, s.want, s.wantWrites, s.wantLive)
		}
	}
	stored := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "cm"}, stored); err != nil || stored.Data["k"] != "b" {
		t.Fatalf("stored %v, %v", stored.Data, err)
	}

	other := desired("c")
	other.OwnerReferences = owner("uid-2")
	if _, _, err := a.Ensure(ctx, other); !errors.Is(err, ErrOwnedByOtherController) {
		t.Fatalf("another controller's object: %v, want ErrOwnedByOtherController", err)
	}
	if writes.Total() != 2 {
		t.Fatalf("a refused Ensure wrote: %v", writes.Log())
	}
}

// TestEnsureOwnLeavesOthersObjects: EnsureOwn creates a missing object and
// updates its controller's own, but leaves one without a controller (a
// user's) or with another controller as it is, sending nothing.
func TestEnsureOwnLeavesOthersObjects(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	writes := &testenv.WriteCounter{}
	a := Applier{Client: writes.Client(base), FieldOwner: FieldOwnerRayCluster}
	desired := func(name, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "rc", UID: "uid-1", Controller: ptr.To(true)}}},
			Data: map[string]string{"k": data},
		}
	}
	if got, _, err := a.EnsureOwn(ctx, desired("ours", "a")); err != nil || got != Created {
		t.Fatalf("missing object: %s, %v; want Created", got, err)
	}
	if got, _, err := a.EnsureOwn(ctx, desired("ours", "b")); err != nil || got != Updated {
		t.Fatalf("own object: %s, %v; want Updated", got, err)
	}
	users := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: "default"}, Data: map[string]string{"k": "mine"}}
	others := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "others", Namespace: "default", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Foo", Name: "f", UID: "uid-2", Controller: ptr.To(true)}}}}
	for _, o := range []*corev1.ConfigMap{users, others} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	before := writes.Total()
	for _, name := range []string{"users", "others"} {
		got, live, err := a.EnsureOwn(ctx, desired(name, "x"))
		if err != nil || got != Foreign || live == nil {
			t.Fatalf("%s: %s, live %v, %v; want Foreign with the live object", name, got, live != nil, err)
		}
	}
	if writes.Total() != before {
		t.Fatalf("EnsureOwn wrote over another's object: %v", writes.Log())
	}
	stored := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(users), stored); err != nil || stored.Data["k"] != "mine" || len(stored.OwnerReferences) != 0 {
		t.Fatalf("the user's object changed: %v %v, %v", stored.Data, stored.OwnerReferences, err)
	}
}

// countingReader counts the Gets it passes to Reader.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestEnsureOwnReadsOnce: EnsureOwn reads the live object once, then
// decides and writes from that read. A cache that does not hold the object
// (a new one) sends the API server one uncached Get per EnsureOwn, not one
// for the ownership check and another for the write.
func TestEnsureOwnReadsOnce(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	uncached := &countingReader{Reader: env.Client}
	a := Applier{Client: env.Client, FieldOwner: FieldOwnerRayCluster, Reader: seesNothing{}, Uncached: uncached}
	desired := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "default", OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "rc", UID: "uid-1", Controller: ptr.To(true)}}},
			Data: map[string]string{"k": data},
		}
	}
	for i, want := range []Result{Created, Unchanged, Updated} {
		data := "a"
		if want == Updated {
			data = "b"
		}
		before := uncached.gets
		if got, _, err := a.EnsureOwn(ctx, desired(data)); err != nil || got != want {
			t.Fatalf("EnsureOwn %d: %s, %v; want %s", i, got, err, want)
		}
		if n := uncached.gets - before; n != 1 {
			t.Errorf("EnsureOwn %d (%s) read the object %d times through Uncached, want 1", i, want, n)
		}
	}
}
