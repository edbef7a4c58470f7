package syncobject

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gantry-dev/gantry/test/testenv"
)

// TestSyncObjectAgainstAPIServer runs against a real kube-apiserver because
// the interesting behaviour (defaulting, IP/port allocation, immutability,
// deletion with finalizers) only exists there.
func TestSyncObjectAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	raw, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var w writeCounter
	c := interceptor.NewClient(raw, countingFuncs(&w, interceptor.Funcs{}))
	ctx := context.Background()

	// syncExpect runs one sync and checks its result and the number of writes.
	syncExpect := func(t *testing.T, desired client.Object, want Result, wantWrites int32) {
		t.Helper()
		before := w.total()
		got, err := SyncObject(ctx, c, desired)
		if err != nil {
			t.Fatalf("SyncObject: %v", err)
		}
		if got != want {
			t.Errorf("result = %q, want %q", got, want)
		}
		if n := w.total() - before; n != wantWrites {
			t.Errorf("writes = %d, want %d", n, wantWrites)
		}
	}
	get := func(t *testing.T, name string, obj client.Object) {
		t.Helper()
		if err := raw.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("configmap lifecycle", func(t *testing.T) {
		desired := configMap("cm-life", map[string]string{"app": "x"}, map[string]string{"k": "v1"})
		desired.Annotations = map[string]string{"gantry/a": "1"}
		syncExpect(t, desired, Created, 1)
		syncExpect(t, desired, Unchanged, 0)

		// Another writer adds its own label and annotation.
		live := &corev1.ConfigMap{}
		get(t, "cm-life", live)
		live.Labels["user"] = "kept"
		live.Annotations["user/note"] = "kept"
		if err := raw.Update(ctx, live); err != nil {
			t.Fatal(err)
		}
		syncExpect(t, desired, Unchanged, 0)

		changed := desired.DeepCopy()
		changed.Data["k"] = "v2"
		changed.Labels["app"] = "y"
		syncExpect(t, changed, Updated, 1)
		get(t, "cm-life", live)
		if live.Data["k"] != "v2" || live.Labels["app"] != "y" || live.Labels["user"] != "kept" ||
			live.Annotations["user/note"] != "kept" || live.Annotations["gantry/a"] != "1" {
			t.Errorf("after patch: labels=%v annotations=%v data=%v", live.Labels, live.Annotations, live.Data)
		}
		syncExpect(t, changed, Unchanged, 0)
	})

	t.Run("service keeps allocated clusterIP and nodePort", func(t *testing.T) {
		desired := func(target int) *corev1.Service {
			return &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc-np", Namespace: ns},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "x"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intOrStr(target)}}},
			}
		}
		syncExpect(t, desired(8080), Created, 1)
		allocated := &corev1.Service{}
		get(t, "svc-np", allocated)
		ip, nodePort := allocated.Spec.ClusterIP, allocated.Spec.Ports[0].NodePort
		if ip == "" || nodePort == 0 {
			t.Fatalf("server allocated nothing: %+v", allocated.Spec)
		}
		syncExpect(t, desired(8080), Unchanged, 0)

		syncExpect(t, desired(9090), Updated, 1)
		got := &corev1.Service{}
		get(t, "svc-np", got)
		if got.Spec.ClusterIP != ip || got.Spec.Ports[0].NodePort != nodePort || got.Spec.Ports[0].TargetPort.IntValue() != 9090 {
			t.Errorf("after patch: clusterIP %s->%s nodePort %d->%d targetPort %v",
				ip, got.Spec.ClusterIP, nodePort, got.Spec.Ports[0].NodePort, got.Spec.Ports[0].TargetPort)
		}
	})

	t.Run("headless service converges", func(t *testing.T) {
		desired := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "svc-headless", Namespace: ns},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "x"},
				Ports: []corev1.ServicePort{{Name: "gcs", Port: 6379}}},
		}
		syncExpect(t, desired, Created, 1)
		syncExpect(t, desired, Unchanged, 0)
	})

	t.Run("immutable configmap and secret are left alone", func(t *testing.T) {
		cm := configMap("cm-frozen", nil, map[string]string{"k": "v1"})
		cm.Immutable = ptr.To(true)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec-frozen", Namespace: ns},
			Data: map[string][]byte{"k": []byte("v1")}, Immutable: ptr.To(true)}
		syncExpect(t, cm, Created, 1)
		syncExpect(t, sec, Created, 1)

		cm2 := cm.DeepCopy()
		cm2.Data["k"] = "v2"
		sec2 := sec.DeepCopy()
		sec2.Data["k"] = []byte("v2")
		syncExpect(t, cm2, Skipped, 0)
		syncExpect(t, sec2, Skipped, 0)

		gotCM, gotSec := &corev1.ConfigMap{}, &corev1.Secret{}
		get(t, "cm-frozen", gotCM)
		get(t, "sec-frozen", gotSec)
		if gotCM.Data["k"] != "v1" || string(gotSec.Data["k"]) != "v1" {
			t.Errorf("immutable data changed: %v %v", gotCM.Data, gotSec.Data)
		}
	})

	t.Run("object being deleted is left alone", func(t *testing.T) {
		cm := configMap("cm-doomed", nil, map[string]string{"k": "v1"})
		cm.Finalizers = []string{"test.gantry.dev/hold"}
		if err := raw.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := raw.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			live := &corev1.ConfigMap{}
			if err := raw.Get(ctx, client.ObjectKeyFromObject(cm), live); err == nil {
				live.Finalizers = nil
				_ = raw.Update(ctx, live)
			}
		})
		syncExpect(t, configMap("cm-doomed", nil, map[string]string{"k": "v2"}), Skipped, 0)
		live := &corev1.ConfigMap{}
		get(t, "cm-doomed", live)
		if live.DeletionTimestamp == nil || live.Data["k"] != "v1" {
			t.Errorf("deleting object touched: %+v", live)
		}
	})

	t.Run("statefulset and deployment converge despite server defaults", func(t *testing.T) {
		sts := statefulSet(corev1.EnvVar{Name: "A", Value: "1"})
		syncExpect(t, sts, Created, 1)
		syncExpect(t, sts, Unchanged, 0)
		changed := statefulSet()
		syncExpect(t, changed, Updated, 1)
		got := &appsv1.StatefulSet{}
		get(t, "ctld", got)
		if len(got.Spec.Template.Spec.Containers[0].Env) != 0 {
			t.Errorf("env not removed: %v", got.Spec.Template.Spec.Containers[0].Env)
		}
		syncExpect(t, changed, Unchanged, 0)

		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "restapi", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Selector: sts.Spec.Selector,
				Template: sts.Spec.Template,
			},
		}
		syncExpect(t, dep, Created, 1)
		syncExpect(t, dep, Unchanged, 0)
	})

	t.Run("AlreadyExists from a racing create is tolerated", func(t *testing.T) {
		racing := interceptor.NewClient(raw, interceptor.Funcs{
			// The racer's object appears between our Get and Create.
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				err := c.Get(ctx, key, obj, opts...)
				if apierrors.IsNotFound(err) {
					if cerr := c.Create(ctx, configMap(key.Name, nil, nil)); cerr != nil {
						t.Fatal(cerr)
					}
				}
				return err
			},
		})
		got, err := SyncObject(ctx, racing, configMap("cm-race", nil, map[string]string{"k": "v"}))
		if err != nil || got != Skipped {
			t.Errorf("sync = %q, %v; want Skipped", got, err)
		}
	})
}
