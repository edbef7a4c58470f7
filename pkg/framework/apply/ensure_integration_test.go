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
