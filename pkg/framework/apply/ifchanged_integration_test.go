package apply

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gantry-dev/gantry/test/testenv"
)

// TestApplyIfChangedAgainstAPIServer proves the write-budget contract: no
// request when nothing changed, and drift, changes and removals still reach
// the server.
func TestApplyIfChangedAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	var applies atomic.Int32
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	counting := interceptor.NewClient(base, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			applies.Add(1)
			return c.Apply(ctx, obj, opts...)
		},
	})
	a := Applier{Client: counting, FieldOwner: FieldOwnerRayCluster}

	desired := func(annotations map[string]string, port int32) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "default", Labels: map[string]string{"ray.io/cluster": "rc"}, Annotations: annotations},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"ray.io/cluster": "rc"},
				Ports:    []corev1.ServicePort{{Name: "dashboard", Port: port, TargetPort: intstr.FromInt32(port)}},
			},
		}
	}
	live := func() *corev1.Service {
		t.Helper()
		svc := &corev1.Service{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "rc-head-svc"}, svc); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	step := func(name string, obj *corev1.Service, current *corev1.Service, wantApply bool) {
		t.Helper()
		before := applies.Load()
		sent, err := a.ApplyIfChanged(ctx, obj, current)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sent != wantApply || (applies.Load()-before == 1) != wantApply {
			t.Fatalf("%s: sent=%v, requests=%d, want apply=%v", name, sent, applies.Load()-before, wantApply)
		}
	}

	step("create", desired(map[string]string{"team": "a"}, 8265), nil, true)
	step("unchanged", desired(map[string]string{"team": "a"}, 8265), live(), false)

	// Someone edits a field Gantry owns: the next reconcile takes it back.
	drifted := live()
	drifted.Spec.Selector["ray.io/cluster"] = "someone-else"
	drifted.Labels["user"] = "kept"
	if err := env.Client.Update(ctx, drifted); err != nil {
		t.Fatal(err)
	}
	step("drift", desired(map[string]string{"team": "a"}, 8265), live(), true)
	if got := live(); got.Spec.Selector["ray.io/cluster"] != "rc" || got.Labels["user"] != "kept" {
		t.Fatalf("after drift correction: selector %v labels %v", got.Spec.Selector, got.Labels)
	}
	step("unchanged after correction", desired(map[string]string{"team": "a"}, 8265), live(), false)

	// Removing an annotation from the desired object removes it from the server.
	step("annotation removed", desired(nil, 8265), live(), true)
	if _, ok := live().Annotations["team"]; ok {
		t.Fatal("removed annotation is still on the Service")
	}
	step("unchanged after removal", desired(nil, 8265), live(), false)

	// A changed port reaches the server (the head-service case of issue 3).
	step("port changed", desired(nil, 8266), live(), true)
	if got := live(); len(got.Spec.Ports) != 1 || got.Spec.Ports[0].Port != 8266 {
		t.Fatalf("ports after change: %v", got.Spec.Ports)
	}
	if live().Spec.ClusterIP == "" {
		t.Fatal("allocated clusterIP lost")
	}
}
