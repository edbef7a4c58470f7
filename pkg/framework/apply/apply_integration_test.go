package apply

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/test/testenv"
)

func TestApplyAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	c := env.Client
	ctx := context.Background()
	a := Applier{Client: c, FieldOwner: FieldOwnerSlurm}

	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "slurm-conf", Namespace: "default", Labels: map[string]string{"app": "slurm"}},
			Data:       map[string]string{"slurm.conf": "ClusterName=a"},
		}
	}
	live := func(t *testing.T) *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "slurm-conf"}, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}

	// The steps build on each other, so they run in order in one test.
	obj := desired()
	if err := a.Apply(ctx, obj); err != nil {
		t.Fatalf("create by apply: %v", err)
	}
	created := live(t)
	if created.Data["slurm.conf"] != "ClusterName=a" || !managedBy(created, FieldOwnerSlurm) {
		t.Fatalf("created = %+v", created)
	}
	if obj.ResourceVersion != created.ResourceVersion {
		t.Errorf("Apply did not refresh obj: rv %q, live %q", obj.ResourceVersion, created.ResourceVersion)
	}

	// Re-applying the same object is a server-side no-op.
	if err := a.Apply(ctx, desired()); err != nil {
		t.Fatal(err)
	}
	if rv := live(t).ResourceVersion; rv != created.ResourceVersion {
		t.Errorf("identical apply bumped resourceVersion %s -> %s", created.ResourceVersion, rv)
	}

	// Another manager changes our field and adds its own label.
	drifted := live(t)
	drifted.Data["slurm.conf"] = "ClusterName=hacked"
	drifted.Labels["team"] = "ml"
	if err := c.Update(ctx, drifted, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}

	if err := a.Apply(ctx, desired()); err != nil {
		t.Fatalf("apply after drift: %v", err)
	}
	got := live(t)
	if got.Data["slurm.conf"] != "ClusterName=a" {
		t.Errorf("drift not corrected: %q", got.Data["slurm.conf"])
	}
	if got.Labels["team"] != "ml" || got.Labels["app"] != "slurm" {
		t.Errorf("labels = %v, want the foreign label kept next to ours", got.Labels)
	}

}

func managedBy(obj client.Object, manager string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
