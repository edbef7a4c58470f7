package syncobject

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const ns = "default"

type writeCounter struct{ creates, patches, updates atomic.Int32 }

func (w *writeCounter) total() int32 { return w.creates.Load() + w.patches.Load() + w.updates.Load() }

// countingFuncs counts writes and then calls next (or the real client).
func countingFuncs(w *writeCounter, next interceptor.Funcs) interceptor.Funcs {
	f := next
	f.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		w.creates.Add(1)
		if next.Create != nil {
			return next.Create(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	f.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		w.patches.Add(1)
		if next.Patch != nil {
			return next.Patch(ctx, c, obj, p, opts...)
		}
		return c.Patch(ctx, obj, p, opts...)
	}
	f.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		w.updates.Add(1)
		return c.Update(ctx, obj, opts...)
	}
	return f
}

func configMap(name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Data:       data,
	}
}

func controllerRef(uid, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: name, UID: types.UID(uid),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func statefulSet(env ...corev1.EnvVar) *appsv1.StatefulSet {
	labels := map[string]string{"app": "slurmctld"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ctld", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Env: env}}},
			},
		},
	}
}

func TestSyncObject(t *testing.T) {
	deleting := configMap("doomed", nil, map[string]string{"k": "old"})
	deleting.Finalizers = []string{"test/keep"}
	deleting.DeletionTimestamp = ptr.To(metav1.Now())

	immutable := configMap("frozen", nil, map[string]string{"k": "old"})
	immutable.Immutable = ptr.To(true)

	otherOwned := configMap("taken", nil, nil)
	otherOwned.OwnerReferences = []metav1.OwnerReference{controllerRef("uid-other", "other")}
	ownedDesired := configMap("taken", nil, nil)
	ownedDesired.OwnerReferences = []metav1.OwnerReference{controllerRef("uid-mine", "mine")}

	sameOwner := configMap("mine", nil, map[string]string{"k": "v"})
	sameOwner.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-pod"},
		controllerRef("uid-mine", "mine"),
	}
	sameOwnerDesired := configMap("mine", nil, map[string]string{"k": "v"})
	sameOwnerDesired.OwnerReferences = []metav1.OwnerReference{controllerRef("uid-mine", "mine")}

	binding := func(role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa", Namespace: ns}},
		}
	}

	cr := func(replicas int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "slinky.slurm.net", Version: "v1beta1", Kind: "NodeSet"})
		u.SetName("ns1")
		u.SetNamespace(ns)
		u.Object["spec"] = map[string]any{"replicas": replicas}
		return u
	}

	tests := []struct {
		name       string
		existing   []client.Object
		desired    client.Object
		opts       []Option
		funcs      interceptor.Funcs
		want       Result
		wantErr    error
		wantAnyErr bool
		wantWrites int32
		check      func(t *testing.T, c client.Client)
	}{
		{
			name:       "missing object is created",
			desired:    configMap("cm", map[string]string{"app": "x"}, map[string]string{"k": "v"}),
			want:       Created,
			wantWrites: 1,
			check: func(t *testing.T, c client.Client) {
				got := &corev1.ConfigMap{}
				mustGet(t, c, "cm", got)
				if got.Data["k"] != "v" || got.Labels["app"] != "x" {
					t.Errorf("created object = %+v", got)
				}
			},
		},
		{
			name:       "identical object sends nothing",
			existing:   []client.Object{configMap("cm", map[string]string{"app": "x"}, map[string]string{"k": "v"})},
			desired:    configMap("cm", map[string]string{"app": "x"}, map[string]string{"k": "v"}),
			want:       Unchanged,
			wantWrites: 0,
		},
		{
			name:       "labels merged, user keys kept, desired keys win, data patched",
			existing:   []client.Object{configMap("cm", map[string]string{"app": "old", "team": "a"}, map[string]string{"k": "old", "gone": "x"})},
			desired:    configMap("cm", map[string]string{"app": "new"}, map[string]string{"k": "v"}),
			want:       Updated,
			wantWrites: 1,
			check: func(t *testing.T, c client.Client) {
				got := &corev1.ConfigMap{}
				mustGet(t, c, "cm", got)
				wantLabels := map[string]string{"app": "new", "team": "a"}
				if !equality.Semantic.DeepEqual(got.Labels, wantLabels) {
					t.Errorf("labels = %v, want %v", got.Labels, wantLabels)
				}
				if !equality.Semantic.DeepEqual(got.Data, map[string]string{"k": "v"}) {
					t.Errorf("data = %v", got.Data)
				}
			},
		},
		{
			name:     "immutable configmap is left alone",
			existing: []client.Object{immutable},
			desired:  configMap("frozen", map[string]string{"new": "label"}, map[string]string{"k": "new"}),
			want:     Skipped,
		},
		{
			name:     "object being deleted is left alone",
			existing: []client.Object{deleting},
			desired:  configMap("doomed", nil, map[string]string{"k": "new"}),
			want:     Skipped,
		},
		{
			name:     "create-only never patches",
			existing: []client.Object{configMap("cm", nil, map[string]string{"k": "old"})},
			desired:  configMap("cm", nil, map[string]string{"k": "new"}),
			opts:     []Option{CreateOnly()},
			want:     Skipped,
		},
		{
			name:    "create racing with another writer tolerates AlreadyExists",
			desired: configMap("cm", nil, nil),
			funcs: interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, obj.GetName())
			}},
			want:       Skipped,
			wantWrites: 1,
		},
		{
			name:    "get error is returned",
			desired: configMap("cm", nil, nil),
			funcs: interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return apierrors.NewServiceUnavailable("down")
			}},
			wantAnyErr: true,
		},
		{
			name:     "patch error is returned",
			existing: []client.Object{configMap("cm", nil, map[string]string{"k": "old"})},
			desired:  configMap("cm", nil, map[string]string{"k": "new"}),
			funcs: interceptor.Funcs{Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("stale"))
			}},
			wantAnyErr: true,
			wantWrites: 1,
		},
		{
			name:     "object controlled by someone else is refused",
			existing: []client.Object{otherOwned},
			desired:  ownedDesired,
			wantErr:  ErrOwnedByOtherController,
		},
		{
			name:     "same controller ref and foreign refs kept: no patch",
			existing: []client.Object{sameOwner},
			desired:  sameOwnerDesired,
			want:     Unchanged,
		},
		{
			name:     "rolebinding roleRef change is reported",
			existing: []client.Object{binding("a")},
			desired:  binding("b"),
			wantErr:  ErrImmutableField,
		},
		{
			name:     "unstructured CR spec replaced",
			existing: []client.Object{cr(1)},
			desired:  cr(3),
			want:     Updated, wantWrites: 1,
			check: func(t *testing.T, c client.Client) {
				got := cr(0)
				if err := c.Get(context.Background(), client.ObjectKeyFromObject(got), got); err != nil {
					t.Fatal(err)
				}
				if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 3 {
					t.Errorf("spec.replicas = %d, want 3", r)
				}
			},
		},
		{
			name:    "kind without rule or spec is an error",
			desired: &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns}}, //nolint:staticcheck // any kind without spec will do
			existing: []client.Object{&corev1.Endpoints{ //nolint:staticcheck
				ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns}}},
			wantErr: ErrNoRule,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w writeCounter
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.existing...).
				WithInterceptorFuncs(countingFuncs(&w, tc.funcs)).Build()
			before := tc.desired.DeepCopyObject()
			got, err := SyncObject(context.Background(), c, tc.desired, tc.opts...)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			case tc.wantAnyErr:
				if err == nil {
					t.Fatal("want an error, got nil")
				}
			case err != nil:
				t.Fatalf("unexpected error: %v", err)
			case got != tc.want:
				t.Errorf("result = %q, want %q", got, tc.want)
			}
			if n := w.total(); n != tc.wantWrites {
				t.Errorf("writes = %d, want %d", n, tc.wantWrites)
			}
			if !equality.Semantic.DeepEqual(before, tc.desired) {
				t.Errorf("desired was modified")
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// TestSyncObjectConvergesInOneWrite syncs twice per case: the first sync
// writes, the second must find nothing to send. Each case is a kind whose
// rule would otherwise produce a perpetual diff.
func TestSyncObjectConvergesInOneWrite(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns}, StringData: map[string]string{"token": "abc"}}
	tests := []struct {
		name     string
		existing client.Object
		desired  client.Object
	}{
		{"statefulset template change", statefulSet(corev1.EnvVar{Name: "A", Value: "1"}), statefulSet(corev1.EnvVar{Name: "B", Value: "2"})},
		{"statefulset env removed", statefulSet(corev1.EnvVar{Name: "A", Value: "1"}, corev1.EnvVar{Name: "B", Value: "2"}), statefulSet(corev1.EnvVar{Name: "A", Value: "1"})},
		{"secret stringData folded into data", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns}}, secret},
		{"configmap data key changed", configMap("cm", nil, map[string]string{"k": "1"}), configMap("cm", nil, map[string]string{"k": "2"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w writeCounter
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.existing).
				WithInterceptorFuncs(countingFuncs(&w, interceptor.Funcs{})).Build()
			ctx := context.Background()
			if got, err := SyncObject(ctx, c, tc.desired); err != nil || got != Updated {
				t.Fatalf("first sync = %q, %v; want Updated", got, err)
			}
			if got, err := SyncObject(ctx, c, tc.desired); err != nil || got != Unchanged {
				t.Fatalf("second sync = %q, %v; want Unchanged", got, err)
			}
			if n := w.patches.Load(); n != 1 {
				t.Errorf("patches = %d, want 1", n)
			}
		})
	}
}

func TestStatefulSetEnvRemovalReachesServer(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(statefulSet(corev1.EnvVar{Name: "A", Value: "1"}, corev1.EnvVar{Name: "B", Value: "2"})).Build()
	if _, err := SyncObject(context.Background(), c, statefulSet(corev1.EnvVar{Name: "A", Value: "1"})); err != nil {
		t.Fatal(err)
	}
	got := &appsv1.StatefulSet{}
	mustGet(t, c, "ctld", got)
	if env := got.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "A" {
		t.Errorf("env = %v, want only A", env)
	}
}

func TestCreatedObjectNeedsNoFollowUpPatch(t *testing.T) {
	var w writeCounter
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(countingFuncs(&w, interceptor.Funcs{})).Build()
	ctx := context.Background()
	for i, want := range []Result{Created, Unchanged} {
		if got, err := SyncObject(ctx, c, statefulSet(corev1.EnvVar{Name: "A", Value: "1"})); err != nil || got != want {
			t.Fatalf("sync %d = %q, %v; want %q", i, got, err, want)
		}
	}
	if w.patches.Load() != 0 {
		t.Errorf("patches = %d, want 0", w.patches.Load())
	}
}

func TestServiceKeepsAllocatedFields(t *testing.T) {
	live := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			SessionAffinity: corev1.ServiceAffinityNone, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
			Selector:              map[string]string{"app": "x"},
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intOrStr(80), NodePort: 30080}},
		},
	}
	desired := func(port int32) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "x"},
				Ports: []corev1.ServicePort{{Name: "http", Port: port}}},
		}
	}
	tests := []struct {
		name string
		port int32
		want Result
	}{
		{"omitted allocated fields are not a change", 80, Unchanged},
		{"port change keeps clusterIP and nodePort", 8080, Updated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(live.DeepCopy()).Build()
			got, err := SyncObject(context.Background(), c, desired(tc.port))
			if err != nil || got != tc.want {
				t.Fatalf("sync = %q, %v; want %q", got, err, tc.want)
			}
			svc := &corev1.Service{}
			mustGet(t, c, "svc", svc)
			if svc.Spec.ClusterIP != "10.0.0.7" || svc.Spec.Ports[0].NodePort != 30080 || svc.Spec.Ports[0].Port != tc.port {
				t.Errorf("spec = %+v", svc.Spec)
			}
		})
	}
}

func TestRegistryCustomRule(t *testing.T) {
	r := NewRegistry()
	var called bool
	r.Register(&corev1.ConfigMap{}, TypedRule(func(e, d *corev1.ConfigMap) error {
		called = true
		e.Data = map[string]string{"custom": "yes"}
		return nil
	}))
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(configMap("cm", nil, nil)).Build()
	if _, err := SyncObject(context.Background(), c, configMap("cm", nil, nil), WithRegistry(r)); err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	mustGet(t, c, "cm", got)
	if !called || got.Data["custom"] != "yes" {
		t.Errorf("custom rule not used: called=%v data=%v", called, got.Data)
	}
	// The default registry keeps its own rule.
	if _, err := SyncObject(context.Background(), c, configMap("cm", nil, map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, "cm", got)
	if !equality.Semantic.DeepEqual(got.Data, map[string]string{"k": "v"}) {
		t.Errorf("default rule: data = %v", got.Data)
	}
}

func mustGet(t *testing.T, c client.Client, name string, obj client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}

func intOrStr(i int) intstr.IntOrString { return intstr.FromInt(i) }

func TestOptimisticLockSendsResourceVersion(t *testing.T) {
	tests := []struct {
		name   string
		opts   []Option
		wantRV bool
	}{
		{"plain merge patch", nil, false},
		{"optimistic lock", []Option{WithOptimisticLock()}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sent string
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
				WithObjects(configMap("cm", nil, map[string]string{"k": "1"})).
				WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					data, err := p.Data(obj)
					if err != nil {
						return err
					}
					sent = string(data)
					return c.Patch(ctx, obj, p, opts...)
				}}).Build()
			if got, err := SyncObject(context.Background(), c, configMap("cm", nil, map[string]string{"k": "2"}), tc.opts...); err != nil || got != Updated {
				t.Fatalf("sync = %q, %v", got, err)
			}
			if has := strings.Contains(sent, `"resourceVersion"`); has != tc.wantRV {
				t.Errorf("patch %s: resourceVersion present = %v, want %v", sent, has, tc.wantRV)
			}
		})
	}
}
