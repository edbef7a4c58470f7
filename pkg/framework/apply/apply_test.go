package apply

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The field managers the tests apply as: two of Gantry's families' and
// upstream Trainer's, which Gantry's TrainJob controller keeps.
const (
	FieldOwnerRayCluster = "gantry-raycluster"
	FieldOwnerSlurm      = "gantry-slurm"
	FieldOwnerTrainer    = "trainer"
)

func typedConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "cm", Namespace: "default", ResourceVersion: "42", UID: "u-1",
			CreationTimestamp: metav1.Now(),
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "someone"}},
			Labels:            map[string]string{"app": "x"},
		},
		Data: map[string]string{"k": "v"},
	}
}

func TestToApplyObject(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "u", "resourceVersion": "7", "annotations": nil},
		"status":   map[string]any{"x": "y"},
	}}
	tests := []struct {
		name      string
		obj       client.Object
		wantGVK   schema.GroupVersionKind
		wantErr   bool
		wantPaths [][]string // must exist
		gonePaths [][]string // must be absent
	}{
		{
			name:      "typed configmap loses server-owned metadata",
			obj:       typedConfigMap(),
			wantGVK:   corev1.SchemeGroupVersion.WithKind("ConfigMap"),
			wantPaths: [][]string{{"metadata", "labels", "app"}, {"data", "k"}},
			gonePaths: [][]string{{"metadata", "resourceVersion"}, {"metadata", "uid"}, {"metadata", "managedFields"}, {"metadata", "creationTimestamp"}},
		},
		{
			name:      "pod loses status and the null creationTimestamp",
			obj:       pod,
			wantGVK:   corev1.SchemeGroupVersion.WithKind("Pod"),
			wantPaths: [][]string{{"spec", "containers"}},
			gonePaths: [][]string{{"status"}, {"metadata", "creationTimestamp"}},
		},
		{
			name:      "unstructured keeps its kind and drops nulls",
			obj:       u,
			wantGVK:   corev1.SchemeGroupVersion.WithKind("ConfigMap"),
			gonePaths: [][]string{{"status"}, {"metadata", "resourceVersion"}, {"metadata", "annotations"}},
		},
		{
			name:    "object without name is refused",
			obj:     &corev1.ConfigMap{},
			wantErr: true,
		},
		{
			name:    "type unknown to the scheme is refused",
			obj:     &unregistered{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.obj.DeepCopyObject()
			got, err := ToApplyObject(tc.obj, clientgoscheme.Scheme)
			if !equality.Semantic.DeepEqual(before, tc.obj) {
				t.Error("input was modified")
			}
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.GroupVersionKind() != tc.wantGVK {
				t.Errorf("gvk = %v, want %v", got.GroupVersionKind(), tc.wantGVK)
			}
			for _, p := range tc.wantPaths {
				if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, p...); !found {
					t.Errorf("missing %v", p)
				}
			}
			for _, p := range tc.gonePaths {
				if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, p...); found {
					t.Errorf("unexpected %v", p)
				}
			}
		})
	}
}

type unregistered struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unregistered) DeepCopyObject() runtime.Object {
	out := *u
	u.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func TestApplier(t *testing.T) {
	tests := []struct {
		name      string
		applier   func(c client.Client) Applier
		applyErr  error
		run       func(ctx context.Context, a Applier) error
		wantErr   bool
		wantCalls int
	}{
		{
			name:      "typed object applied with owner and force",
			applier:   func(c client.Client) Applier { return Applier{Client: c, FieldOwner: FieldOwnerSlurm} },
			run:       func(ctx context.Context, a Applier) error { return a.Apply(ctx, typedConfigMap()) },
			wantCalls: 1,
		},
		{
			name:     "server error is returned",
			applier:  func(c client.Client) Applier { return Applier{Client: c, FieldOwner: FieldOwnerRayCluster} },
			applyErr: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("no")),
			run:      func(ctx context.Context, a Applier) error { return a.Apply(ctx, typedConfigMap()) },
			wantErr:  true, wantCalls: 1,
		},
		{
			name:    "missing field owner is refused before any request",
			applier: func(c client.Client) Applier { return Applier{Client: c} },
			run:     func(ctx context.Context, a Applier) error { return a.Apply(ctx, typedConfigMap()) },
			wantErr: true,
		},
		{
			name:    "missing client is refused",
			applier: func(client.Client) Applier { return Applier{FieldOwner: FieldOwnerSlurm} },
			run:     func(ctx context.Context, a Applier) error { return a.Apply(ctx, typedConfigMap()) },
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
				Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
					calls++
					o := &client.ApplyOptions{}
					o.ApplyOptions(opts)
					if o.Force == nil || !*o.Force {
						t.Error("apply without ForceOwnership")
					}
					if o.FieldManager == "" {
						t.Error("apply without field manager")
					}
					if tc.applyErr != nil {
						return tc.applyErr
					}
					return c.Apply(ctx, obj, opts...)
				},
			}).Build()
			a := tc.applier(c)
			err := tc.run(context.Background(), a)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("apply calls = %d, want %d", calls, tc.wantCalls)
			}
		})
	}
}

func TestApplyUpdatesTheObjectFromTheServer(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	obj := typedConfigMap()
	obj.ResourceVersion = ""
	if err := (Applier{Client: c, FieldOwner: FieldOwnerSlurm}).Apply(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	if obj.ResourceVersion == "" || obj.Data["k"] != "v" {
		t.Errorf("object not refreshed from server: %+v", obj)
	}
	live := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatal(err)
	}
	if live.Data["k"] != "v" || live.Labels["app"] != "x" {
		t.Errorf("live = %+v", live)
	}
}
