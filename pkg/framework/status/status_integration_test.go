package status

import (
	"context"
	"encoding/json"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/gantry-dev/gantry/test/testenv"
)

// TestUpdateAgainstAPIServer uses the JobSet CRD because it has a status
// subresource and metav1.Conditions, like Gantry's own CRs.
func TestUpdateAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme}})
	raw, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var statusWrites atomic.Int32
	var lastPatch atomic.Pointer[[]byte]
	c := interceptor.NewClient(raw, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			statusWrites.Add(1)
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			lastPatch.Store(&data)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	ctx := context.Background()

	js := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "default"},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: "node", Replicas: 1,
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}}},
		}}},
	}
	if err := raw.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	setReady := func(at time.Time) func(*jobsetv1alpha2.JobSet) error {
		return func(j *jobsetv1alpha2.JobSet) error {
			meta.SetStatusCondition(&j.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
				Reason: "AllReady", Message: "ready", LastTransitionTime: metav1.NewTime(at)})
			return nil
		}
	}
	update := func(t *testing.T, obj *jobsetv1alpha2.JobSet, mutate func(*jobsetv1alpha2.JobSet) error, wantChanged bool) {
		t.Helper()
		before := statusWrites.Load()
		changed, err := Update(ctx, c, obj, mutate)
		if err != nil {
			t.Fatal(err)
		}
		if changed != wantChanged {
			t.Errorf("changed = %v, want %v", changed, wantChanged)
		}
		if got := statusWrites.Load() - before; (got > 0) != wantChanged {
			t.Errorf("status writes = %d, want changed=%v", got, wantChanged)
		}
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

	update(t, js, setReady(t0), true)
	rv := js.ResourceVersion

	// Same condition, later timestamp: nothing is written.
	update(t, js, func(j *jobsetv1alpha2.JobSet) error {
		j.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Hour))
		return nil
	}, false)
	live := &jobsetv1alpha2.JobSet{}
	if err := raw.Get(ctx, client.ObjectKeyFromObject(js), live); err != nil {
		t.Fatal(err)
	}
	if live.ResourceVersion != rv {
		t.Errorf("resourceVersion moved %s -> %s without a real change", rv, live.ResourceVersion)
	}

	// A stale copy meets a concurrent write: the conflict is retried on a
	// fresh read and both changes end up in the status.
	stale := live.DeepCopy()
	live.Status.Restarts = 2
	if err := raw.Status().Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	before := statusWrites.Load()
	update(t, stale, func(j *jobsetv1alpha2.JobSet) error { j.Status.TerminalState = "Completed"; return nil }, true)
	if n := statusWrites.Load() - before; n != 2 {
		t.Errorf("status writes = %d, want 2 (one conflict, one retry)", n)
	}
	final := &jobsetv1alpha2.JobSet{}
	if err := raw.Get(ctx, client.ObjectKeyFromObject(js), final); err != nil {
		t.Fatal(err)
	}
	if final.Status.Restarts != 2 || final.Status.TerminalState != "Completed" || len(final.Status.Conditions) != 1 {
		t.Errorf("final status = %+v", final.Status)
	}

	// Fields the new status lacks are removed (the patch sends null for
	// them), and the patch holds the changed status fields and the
	// resourceVersion precondition, never the spec.
	update(t, final, func(j *jobsetv1alpha2.JobSet) error {
		j.Status.TerminalState, j.Status.Conditions = "", nil
		return nil
	}, true)
	var body map[string]any
	if err := json.Unmarshal(*lastPatch.Load(), &body); err != nil {
		t.Fatal(err)
	}
	wantBody := map[string]any{
		"metadata": map[string]any{"resourceVersion": stale.ResourceVersion},
		"status":   map[string]any{"terminalState": nil, "conditions": nil},
	}
	if !reflect.DeepEqual(body, wantBody) {
		t.Errorf("patch = %v, want %v", body, wantBody)
	}
	cleared := &jobsetv1alpha2.JobSet{}
	if err := raw.Get(ctx, client.ObjectKeyFromObject(js), cleared); err != nil {
		t.Fatal(err)
	}
	if cleared.Status.TerminalState != "" || len(cleared.Status.Conditions) != 0 || cleared.Status.Restarts != 2 {
		t.Errorf("status after clearing = %+v", cleared.Status)
	}
	if cleared.ResourceVersion != final.ResourceVersion {
		t.Errorf("caller's object has resourceVersion %s, the server %s", final.ResourceVersion, cleared.ResourceVersion)
	}
}
