package status

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var t0 = metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))

func pod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: t0}},
		},
	}
}

var errConflict = apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("stale"))

func TestUpdate(t *testing.T) {
	setRunning := func(p *corev1.Pod) error { p.Status.Phase = corev1.PodRunning; return nil }
	tests := []struct {
		name        string
		mutate      func(*corev1.Pod) error
		opts        []Option
		failUpdates int   // Status().Update calls failing before success
		failWith    error // the error those calls return
		wantChanged bool
		wantErr     bool
		wantUpdates int // Status().Update calls that reached the interceptor
		wantMutates int
		wantPhase   corev1.PodPhase
	}{
		{name: "changed field is written", mutate: setRunning, wantChanged: true, wantUpdates: 1, wantMutates: 1, wantPhase: corev1.PodRunning},
		{name: "no change no write", mutate: func(*corev1.Pod) error { return nil }, wantMutates: 1, wantPhase: corev1.PodPending},
		{
			name: "timestamp-only change is not written",
			mutate: func(p *corev1.Pod) error {
				p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Hour))
				p.Status.Conditions[0].LastProbeTime = metav1.NewTime(t0.Add(time.Hour))
				return nil
			},
			wantMutates: 1, wantPhase: corev1.PodPending,
		},
		{
			name: "condition status change is written with its timestamp",
			mutate: func(p *corev1.Pod) error {
				p.Status.Conditions[0].Status = corev1.ConditionTrue
				p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Hour))
				return nil
			},
			wantChanged: true, wantUpdates: 1, wantMutates: 1, wantPhase: corev1.PodPending,
		},
		{
			name:        "caller equality overrides the default",
			mutate:      setRunning,
			opts:        []Option{WithEqual(func(a, b *corev1.Pod) bool { return true })},
			wantMutates: 1, wantPhase: corev1.PodPending,
		},
		{name: "mutate error aborts", mutate: func(*corev1.Pod) error { return errors.New("boom") }, wantErr: true, wantMutates: 1, wantPhase: corev1.PodPending},
		{
			name: "conflict is retried on a fresh copy", mutate: setRunning,
			failUpdates: 1, failWith: errConflict,
			wantChanged: true, wantUpdates: 2, wantMutates: 2, wantPhase: corev1.PodRunning,
		},
		{
			name: "endless conflict gives up", mutate: setRunning,
			failUpdates: 100, failWith: errConflict,
			wantErr: true, wantUpdates: 5, wantMutates: 5, wantPhase: corev1.PodPending,
		},
		{
			name: "other errors are not retried", mutate: setRunning,
			failUpdates: 100, failWith: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no")),
			wantErr: true, wantUpdates: 1, wantMutates: 1, wantPhase: corev1.PodPending,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			updates := 0
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
				WithObjects(pod()).WithStatusSubresource(&corev1.Pod{}).
				WithInterceptorFuncs(interceptor.Funcs{
					SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
						updates++
						if updates <= tc.failUpdates {
							return tc.failWith
						}
						return c.SubResource(sub).Update(ctx, obj, opts...)
					},
				}).Build()
			ctx := context.Background()
			obj := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "p"}, obj); err != nil {
				t.Fatal(err)
			}
			rvBefore := obj.ResourceVersion
			mutates := 0
			changed, err := Update(ctx, c, obj, func(p *corev1.Pod) error { mutates++; return tc.mutate(p) }, tc.opts...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if updates != tc.wantUpdates || mutates != tc.wantMutates {
				t.Errorf("updates=%d mutates=%d, want %d and %d", updates, mutates, tc.wantUpdates, tc.wantMutates)
			}
			live := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
				t.Fatal(err)
			}
			if live.Status.Phase != tc.wantPhase {
				t.Errorf("live phase = %q, want %q", live.Status.Phase, tc.wantPhase)
			}
			if tc.wantChanged && (obj.ResourceVersion == rvBefore || obj.ResourceVersion != live.ResourceVersion) {
				t.Errorf("caller's object not refreshed: rv %s -> %s, live %s", rvBefore, obj.ResourceVersion, live.ResourceVersion)
			}
			if !tc.wantChanged && !obj.Status.Conditions[0].LastTransitionTime.Equal(&t0) {
				t.Errorf("unwritten change leaked into the caller's object")
			}
		})
	}
}

// TestUpdateConflictSeesConcurrentWrite proves the retry re-reads: a status
// field written by someone else between our read and write must survive.
func TestUpdateConflictSeesConcurrentWrite(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(pod()).WithStatusSubresource(&corev1.Pod{}).Build()
	ctx := context.Background()
	stale := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "p"}, stale); err != nil {
		t.Fatal(err)
	}
	other := stale.DeepCopy()
	other.Status.Message = "written by someone else"
	if err := c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	changed, err := Update(ctx, c, stale, func(p *corev1.Pod) error { p.Status.Phase = corev1.PodRunning; return nil })
	if err != nil || !changed {
		t.Fatalf("Update = %v, %v", changed, err)
	}
	if stale.Status.Message != "written by someone else" || stale.Status.Phase != corev1.PodRunning {
		t.Errorf("status = %+v", stale.Status)
	}
}

func TestStatusEqual(t *testing.T) {
	u := func(reason string, ts string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Ready", "reason": reason, "lastTransitionTime": ts}},
		}}}
	}
	tests := []struct {
		name string
		a, b client.Object
		want bool
	}{
		{"unstructured same", u("A", "t1"), u("A", "t1"), true},
		{"unstructured time only", u("A", "t1"), u("A", "t2"), true},
		{"unstructured reason", u("A", "t1"), u("B", "t1"), false},
		{"typed same", pod(), pod(), true},
		{"typed message", pod(), func() *corev1.Pod { p := pod(); p.Status.Message = "x"; return p }(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StatusEqual(tc.a, tc.b)
			if err != nil || got != tc.want {
				t.Errorf("StatusEqual = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
