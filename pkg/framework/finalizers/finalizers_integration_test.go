package finalizers

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/test/testenv"
)

const (
	ours   = "gantry.dev/test"
	theirs = "example.com/other"
)

// TestFinalizersAgainstAPIServer: adding and removing send one request and
// none when there is nothing to do, and a finalizer another controller
// added after our read is never lost: the stale change is refused.
func TestFinalizersAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	writes := &testenv.WriteCounter{}
	c := writes.Client(base)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fin", Namespace: "default"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if sent, err := Add(ctx, c, cm, ours); err != nil || !sent {
		t.Fatalf("Add: sent %v, %v", sent, err)
	}
	if sent, err := Add(ctx, c, cm, ours); err != nil || sent {
		t.Fatalf("Add again: sent %v, %v; want nothing sent", sent, err)
	}
	if writes.Total() != 1 {
		t.Fatalf("writes %v, want 1", writes.Log())
	}

	// Another controller adds its finalizer after our read.
	stale := cm.DeepCopy()
	other := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), other); err != nil {
		t.Fatal(err)
	}
	other.Finalizers = append(other.Finalizers, theirs)
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := Remove(ctx, c, stale, ours); !apierrors.IsConflict(err) {
		t.Fatalf("Remove from a stale read: %v, want a Conflict", err)
	}
	fresh := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), fresh); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fresh.Finalizers, []string{ours, theirs}) {
		t.Fatalf("finalizers %v after a refused stale change", fresh.Finalizers)
	}
	// From a fresh read it goes, and theirs stays.
	if sent, err := Remove(ctx, c, fresh, ours); err != nil || !sent {
		t.Fatalf("Remove: sent %v, %v", sent, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), fresh); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fresh.Finalizers, []string{theirs}) {
		t.Fatalf("finalizers %v, want only %s", fresh.Finalizers, theirs)
	}
	if sent, err := Remove(ctx, c, fresh, ours); err != nil || sent {
		t.Fatalf("Remove again: sent %v, %v; want nothing sent", sent, err)
	}
	fresh.Finalizers = nil
	if err := env.Client.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
}
