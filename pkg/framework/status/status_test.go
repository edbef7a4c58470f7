package status

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

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
					SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
						updates++
						if updates <= tc.failUpdates {
							return tc.failWith
						}
						return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
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

// TestMergePatch checks the status patch against RFC 7386 as
// evanphx/json-patch applies it: the patch applied to before gives after
// (without its nulls, which a merge patch cannot store), and it holds
// nothing that did not change.
func TestMergePatch(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name          string
		before, after map[string]any
		want          map[string]any
	}{
		{name: "nothing changed", before: obj("phase", "Running"), after: obj("phase", "Running"), want: obj()},
		{name: "a scalar changed", before: obj("phase", "Pending", "message", "m"), after: obj("phase", "Running", "message", "m"), want: obj("phase", "Running")},
		{name: "a key is gone", before: obj("phase", "Running", "message", "m"), after: obj("phase", "Running"), want: obj("message", nil)},
		{name: "from no status", before: nil, after: obj("phase", "Running"), want: obj("phase", "Running")},
		{name: "to no status", before: obj("phase", "Running"), after: nil, want: obj("phase", nil)},
		{
			name:   "nested objects are diffed key by key",
			before: obj("counts", obj("ready", int64(1), "active", int64(2)), "phase", "Running"),
			after:  obj("counts", obj("ready", int64(2), "active", int64(2)), "phase", "Running"),
			want:   obj("counts", obj("ready", int64(2))),
		},
		{
			name:   "a nested key is gone",
			before: obj("counts", obj("ready", int64(1), "failed", int64(1))),
			after:  obj("counts", obj("ready", int64(1))),
			want:   obj("counts", obj("failed", nil)),
		},
		{
			name:   "arrays are replaced whole",
			before: obj("conditions", []any{obj("type", "A", "status", "True"), obj("type", "B", "status", "False")}),
			after:  obj("conditions", []any{obj("type", "B", "status", "True")}),
			want:   obj("conditions", []any{obj("type", "B", "status", "True")}),
		},
		{name: "an equal array is left out", before: obj("hosts", []any{"a", "b"}), after: obj("hosts", []any{"a", "b"}), want: obj()},
		{name: "an object replaces a scalar", before: obj("x", "s"), after: obj("x", obj("y", "z")), want: obj("x", obj("y", "z"))},
		{name: "an explicit null stays absent", before: obj("phase", "Running"), after: obj("phase", "Running", "startTime", nil), want: obj("startTime", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergePatch(tc.before, tc.after)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("patch = %v, want %v", got, tc.want)
			}
			doc := func(m map[string]any) []byte {
				b, err := json.Marshal(map[string]any{"status": m})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			applied, err := jsonpatch.MergePatch(doc(tc.before), doc(got))
			if err != nil {
				t.Fatal(err)
			}
			// A merge patch stores no null: after without them (and an
			// absent status as an empty one) is what it can give.
			wantDoc := doc(withoutNulls(tc.after))
			if !jsonpatch.Equal(applied, wantDoc) {
				t.Errorf("before + patch = %s, want %s", applied, wantDoc)
			}
		})
	}
}

func withoutNulls(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		switch v := v.(type) {
		case nil:
		case map[string]any:
			out[k] = withoutNulls(v)
		default:
			out[k] = v
		}
	}
	return out
}
