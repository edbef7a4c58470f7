package apply

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/test/testenv"
)

// TestEnsureUpgradesMergePatchedObjects: an object an earlier Gantry wrote
// by create and merge patch (client-side, the same manager name) is moved
// to server-side apply before the first apply. A label and a data key the
// old writes set and desired no longer sets are then removed, and
// managedFields keep no Update entry of that manager. Without UpgradeFrom
// (the contrast) they would stay forever, held by the old entry.
func TestEnsureUpgradesMergePatchedObjects(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	const manager = FieldOwnerSlurm
	legacy := client.WithFieldOwner(env.Client, manager)

	oldWrite := func(t *testing.T, name string) {
		t.Helper()
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"old": "x"},
				Annotations: map[string]string{"gantry.dev/owned-fields-hash": "abc"}},
			Data: map[string]string{"kept": "1", "dropped": "1"},
		}
		if err := legacy.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		base := cm.DeepCopy()
		cm.Data["kept"] = "2"
		if err := legacy.Patch(ctx, cm, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	desired := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"kept": "3"}}
	}
	read := func(t *testing.T, name string) *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	hasUpdateEntry := func(cm *corev1.ConfigMap) bool {
		for _, e := range cm.ManagedFields {
			if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationUpdate {
				return true
			}
		}
		return false
	}

	t.Run("upgraded", func(t *testing.T) {
		oldWrite(t, "upgraded")
		a := Applier{Client: legacy, FieldOwner: manager, Uncached: env.Client, UpgradeFrom: []string{manager}}
		if res, _, err := a.Ensure(ctx, desired("upgraded")); err != nil || res != Updated {
			t.Fatalf("Ensure = %s, %v; want Updated", res, err)
		}
		cm := read(t, "upgraded")
		if _, ok := cm.Data["dropped"]; ok || cm.Data["kept"] != "3" {
			t.Errorf("data = %v, want only kept=3", cm.Data)
		}
		if _, ok := cm.Labels["old"]; ok {
			t.Errorf("the old label survived: %v", cm.Labels)
		}
		if _, ok := cm.Annotations["gantry.dev/owned-fields-hash"]; ok {
			t.Errorf("the old hash annotation survived: %v", cm.Annotations)
		}
		if hasUpdateEntry(cm) {
			t.Errorf("managedFields still hold %s's Update entry: %+v", manager, cm.ManagedFields)
		}
		// Once applied, the object is never upgraded again: a second
		// Ensure of the same desired object sends nothing.
		writes := &testenv.WriteCounter{}
		base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		a.Client = client.WithFieldOwner(writes.Client(base), manager)
		if res, _, err := a.Ensure(ctx, desired("upgraded")); err != nil || res != Unchanged || writes.Total() != 0 {
			t.Fatalf("second Ensure = %s, %v with writes %v; want Unchanged and none", res, err, writes.Log())
		}
	})

	t.Run("not upgraded", func(t *testing.T) {
		oldWrite(t, "orphaned")
		a := Applier{Client: legacy, FieldOwner: manager}
		if _, _, err := a.Ensure(ctx, desired("orphaned")); err != nil {
			t.Fatal(err)
		}
		cm := read(t, "orphaned")
		if cm.Data["dropped"] != "1" || cm.Labels["old"] != "x" || !hasUpdateEntry(cm) {
			t.Errorf("without the upgrade the old fields were expected to stay (the reason for it): data %v labels %v", cm.Data, cm.Labels)
		}
	})
}

// TestEnsureTakesOverUncachedAndImmutable: an object the reader cannot see
// (outside the cache's selector) is found through Uncached: refused when
// another controller owns it, and otherwise taken over in place, its
// immutable StatefulSet fields (selector, service name, claim templates)
// kept as they are while the template is updated.
func TestEnsureTakesOverUncachedAndImmutable(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	owner := func(uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "slinky.slurm.net/v1beta1", Kind: "Controller", Name: "slurm", UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	sts := func(name, uid string, selector map[string]string, image string, claims []corev1.PersistentVolumeClaim) *appsv1.StatefulSet {
		labels := map[string]string{"app": "slurmctld", "gantry": "yes", "slinky": "yes"}
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", OwnerReferences: owner(uid)},
			Spec: appsv1.StatefulSetSpec{
				Selector:             &metav1.LabelSelector{MatchLabels: selector},
				ServiceName:          name + "-svc",
				VolumeClaimTemplates: claims,
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "slurmctld", Image: image}}}},
			},
		}
	}
	claim := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "statesave"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("4Gi")}}}}}
	upstream := sts("slurm-controller", "uid-1", map[string]string{"slinky": "yes"}, "slurmctld:old", claim)
	if err := env.Client.Create(ctx, upstream); err != nil {
		t.Fatal(err)
	}
	// A reader that never finds anything stands in for a cache whose
	// selector the upstream object does not match.
	a := Applier{Client: env.Client, FieldOwner: FieldOwnerSlurm, Reader: seesNothing{}, Uncached: env.Client}

	if _, _, err := a.Ensure(ctx, sts("slurm-controller", "uid-2", map[string]string{"gantry": "yes"}, "slurmctld:new", nil)); !errors.Is(err, ErrOwnedByOtherController) {
		t.Fatalf("another controller's StatefulSet: %v, want ErrOwnedByOtherController", err)
	}
	res, _, err := a.Ensure(ctx, sts("slurm-controller", "uid-1", map[string]string{"gantry": "yes"}, "slurmctld:new", nil))
	if err != nil || res != Updated {
		t.Fatalf("taking over: %s, %v; want Updated", res, err)
	}
	live := &appsv1.StatefulSet{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(upstream), live); err != nil {
		t.Fatal(err)
	}
	if live.UID != upstream.UID || live.Spec.Template.Spec.Containers[0].Image != "slurmctld:new" {
		t.Errorf("not taken over in place: uid %s image %s", live.UID, live.Spec.Template.Spec.Containers[0].Image)
	}
	if live.Spec.Selector.MatchLabels["slinky"] != "yes" || len(live.Spec.VolumeClaimTemplates) != 1 || live.Spec.ServiceName != "slurm-controller-svc" {
		t.Errorf("immutable fields changed: selector %v, claims %d, service %s", live.Spec.Selector.MatchLabels, len(live.Spec.VolumeClaimTemplates), live.Spec.ServiceName)
	}
}

type seesNothing struct{ client.Reader }

func (seesNothing) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "statefulsets"}, key.Name)
}
