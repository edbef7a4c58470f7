package apply

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gantry-dev/gantry/test/testenv"
)

// TestCreateThenApply: Create makes the object in one request, carrying the
// applied-hash of the same body, so Ensure then finds it current and sends
// nothing; an object that exists is left as it is; and the first apply
// that changes it (a label and a data key no longer desired) removes what
// the create wrote, because an Applier that Creates moves the create's
// update entry into its apply entry first. Without Creates (the contrast)
// the dropped label and key stay, held by the update entry.
func TestCreateThenApply(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	const manager = FieldOwnerSlurm
	desired := func(name string, labels, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}, Data: data}
	}
	read := func(t *testing.T, name string) *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	entries := func(cm *corev1.ConfigMap, op metav1.ManagedFieldsOperationType) int {
		n := 0
		for _, e := range cm.ManagedFields {
			if e.Manager == manager && e.Operation == op {
				n++
			}
		}
		return n
	}

	for _, tc := range []struct {
		name    string
		creates bool
	}{{"creates", true}, {"without Creates", false}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "create-" + map[bool]string{true: "upgraded", false: "contrast"}[tc.creates]
			a := Applier{Client: env.Client, FieldOwner: manager, Uncached: env.Client, Creates: tc.creates}
			first := desired(name, map[string]string{"old": "x", "kept": "1"}, map[string]string{"kept": "1", "dropped": "1"})
			created, err := a.Create(ctx, first)
			if err != nil || !created {
				t.Fatalf("Create = %v, %v; want true", created, err)
			}
			if first.UID == "" || first.Annotations[AnnotationAppliedHash] == "" {
				t.Fatalf("Create did not return the server's object with its hash: %+v", first.ObjectMeta)
			}
			// The same body again: the object exists, nothing is written.
			again := desired(name, map[string]string{"old": "y"}, map[string]string{"kept": "9"})
			if created, err := a.Create(ctx, again); err != nil || created {
				t.Fatalf("second Create = %v, %v; want false, nil", created, err)
			}
			live := read(t, name)
			if live.Labels["old"] != "x" || live.ResourceVersion != first.ResourceVersion {
				t.Fatalf("the second Create changed the object: %+v", live.ObjectMeta)
			}
			// Ensure with the created body sends nothing.
			same := desired(name, map[string]string{"old": "x", "kept": "1"}, map[string]string{"kept": "1", "dropped": "1"})
			if res, _, err := a.ensureFrom(ctx, same, live); err != nil || res != Unchanged {
				t.Fatalf("Ensure of the created body = %s, %v; want Unchanged", res, err)
			}
			// A changed body drops a label and a key.
			changed := desired(name, map[string]string{"kept": "1"}, map[string]string{"kept": "2"})
			if res, _, err := a.ensureFrom(ctx, changed, read(t, name)); err != nil || res != Updated {
				t.Fatalf("Ensure of the changed body = %s, %v; want Updated", res, err)
			}
			cm := read(t, name)
			_, labelLeft := cm.Labels["old"]
			_, keyLeft := cm.Data["dropped"]
			if tc.creates {
				if labelLeft || keyLeft || cm.Data["kept"] != "2" {
					t.Errorf("labels %v, data %v: want the dropped label and key gone, kept=2", cm.Labels, cm.Data)
				}
				if n := entries(cm, metav1.ManagedFieldsOperationUpdate); n != 0 {
					t.Errorf("%d update entries of %s remain; want none", n, manager)
				}
				return
			}
			if !labelLeft || !keyLeft {
				t.Errorf("contrast: labels %v, data %v; the create's update entry should have kept them", cm.Labels, cm.Data)
			}
		})
	}
}

// TestCreateNeedsUncached: an Applier that Creates cannot upgrade without
// a reader past the cache, and says so.
func TestCreateNeedsUncached(t *testing.T) {
	a := Applier{Client: fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(), FieldOwner: FieldOwnerSlurm, Creates: true}
	if _, err := a.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}); err == nil {
		t.Fatal("Create without Uncached: no error")
	}
}
