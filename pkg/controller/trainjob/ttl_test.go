package trainjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	gevents "github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/runtime"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func TestTTLAfterFinished(t *testing.T) {
	finished := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cond := func(typ string, status metav1.ConditionStatus, at time.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: "R", LastTransitionTime: metav1.NewTime(at)}
	}
	complete := cond(trainer.TrainJobComplete, metav1.ConditionTrue, finished)
	cases := []struct {
		name       string
		ttl        *int32
		conds      []metav1.Condition
		completion *metav1.Time
		now        time.Time
		want       ttlState
	}{
		{name: "no TTL", conds: []metav1.Condition{complete}, now: finished.Add(time.Hour), want: ttlState{}},
		{name: "a running job has none", ttl: ptr.To[int32](0), now: finished, want: ttlState{}},
		{name: "a suspended (queued) job is not finished", ttl: ptr.To[int32](0),
			conds: []metav1.Condition{cond(trainer.TrainJobSuspended, metav1.ConditionTrue, finished)}, now: finished.Add(time.Hour), want: ttlState{}},
		{name: "Complete=False is not finished", ttl: ptr.To[int32](0),
			conds: []metav1.Condition{cond(trainer.TrainJobComplete, metav1.ConditionFalse, finished)}, now: finished.Add(time.Hour), want: ttlState{}},
		{name: "counts from the Complete condition", ttl: ptr.To[int32](60), conds: []metav1.Condition{complete}, now: finished.Add(20 * time.Second),
			want: ttlState{remaining: 40 * time.Second, limit: time.Minute, finishedAt: finished}},
		{name: "counts from the Failed condition", ttl: ptr.To[int32](60),
			conds: []metav1.Condition{cond(trainer.TrainJobFailed, metav1.ConditionTrue, finished)}, now: finished.Add(59 * time.Second),
			want: ttlState{remaining: time.Second, limit: time.Minute, finishedAt: finished}},
		{name: "exactly at the TTL is expired", ttl: ptr.To[int32](60), conds: []metav1.Condition{complete}, now: finished.Add(time.Minute),
			want: ttlState{expired: true, limit: time.Minute, finishedAt: finished}},
		{name: "expired long ago (a manager restart)", ttl: ptr.To[int32](60), conds: []metav1.Condition{complete}, now: finished.Add(24 * time.Hour),
			want: ttlState{expired: true, limit: time.Minute, finishedAt: finished}},
		{name: "zero deletes at once", ttl: ptr.To[int32](0), conds: []metav1.Condition{complete}, now: finished,
			want: ttlState{expired: true, finishedAt: finished}},
		{name: "a finish in the future (clock skew) waits", ttl: ptr.To[int32](10), conds: []metav1.Condition{complete}, now: finished.Add(-5 * time.Second),
			want: ttlState{remaining: 15 * time.Second, limit: 10 * time.Second, finishedAt: finished}},
		{name: "no transition time: completionTime", ttl: ptr.To[int32](60),
			conds:      []metav1.Condition{{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "R"}},
			completion: ptr.To(metav1.NewTime(finished)), now: finished.Add(30 * time.Second),
			want: ttlState{remaining: 30 * time.Second, limit: time.Minute, finishedAt: finished}},
		{name: "no time at all: nothing to count from", ttl: ptr.To[int32](60),
			conds: []metav1.Condition{{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "R"}}, now: finished,
			want: ttlState{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainer.TrainJob{Status: trainer.TrainJobStatus{Conditions: tc.conds, CompletionTime: tc.completion}}
			if got := ttlAfterFinished(tj, tc.ttl, tc.now); got != tc.want {
				t.Errorf("ttlAfterFinished() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFinishedJobIsDeletedWhenItsTTLExpires drives Reconcile with a fake
// clock: a finished job whose TTL comes from its runtime's runPolicy is
// requeued for the time left, and deleted (foreground, so its JobSet and
// pods go first) with a TTLExpired event once it has passed. Each step is
// a fresh Reconciler, as after a manager restart: the TTL is worked out
// from the Complete condition, not from anything held in memory.
func TestFinishedJobIsDeletedWhenItsTTLExpires(t *testing.T) {
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	finished := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	spec := torchRuntimeSpec()
	spec.RunPolicy = &trainer.RunPolicy{TTLSecondsAfterFinished: ptr.To[int32](30)}
	ctr := trainertesting.MakeClusterTrainingRuntime("runtime").Spec(spec).Obj()
	tj := trainertesting.MakeTrainJob("tj", "ns").RuntimeRef(trainer.ClusterTrainingRuntimeKind, "runtime").Obj()
	tj.CreationTimestamp = metav1.NewTime(finished.Add(-time.Hour))
	tj.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "AllJobsCompleted",
		Message: "done", LastTransitionTime: metav1.NewTime(finished)}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ctr, tj).WithStatusSubresource(tj).Build()

	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	reconcileAt := func(now time.Time) (ctrl.Result, *events.FakeRecorder) {
		t.Helper()
		rt, err := runtime.New(runtime.Options{Existing: c, RESTMapper: meta.NewDefaultRESTMapper(nil)})
		if err != nil {
			t.Fatal(err)
		}
		clk := clocktesting.NewFakeClock(now)
		rec := events.NewFakeRecorder(10)
		r := (&Reconciler{client: c, runtime: rt, metrics: metrics, clock: clk, recorder: gevents.NewRecorder(rec),
			statusWindow: status.NewCoalescer(StatusWindow, clk)}).withSkeleton()
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tj)})
		if err != nil {
			t.Fatalf("Reconcile at %s: %v", now, err)
		}
		return res, rec
	}
	exists := func() bool {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(tj), &trainer.TrainJob{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	res, rec := reconcileAt(finished.Add(10 * time.Second))
	if res.RequeueAfter != 20*time.Second {
		t.Errorf("10s after finishing with a 30s TTL: RequeueAfter = %s, want 20s", res.RequeueAfter)
	}
	if !exists() || len(rec.Events) != 0 {
		t.Fatalf("deleted or told before the TTL expired (exists %v, %d events)", exists(), len(rec.Events))
	}

	res, rec = reconcileAt(finished.Add(31 * time.Second))
	if exists() {
		t.Fatal("a finished job past its TTL was not deleted")
	}
	if res.RequeueAfter != 0 {
		t.Errorf("a deleted job is requeued after %s", res.RequeueAfter)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Normal "+ReasonTTLExpired+" ") || !strings.Contains(e, "30s") || !strings.Contains(e, "runtime") {
			t.Errorf("event %q, want a Normal %s naming the TTL and where it came from", e, ReasonTTLExpired)
		}
	default:
		t.Errorf("no %s event", ReasonTTLExpired)
	}
	if got := counterValue(t, reg, "gantry_trainjob_ttl_deleted_total", map[string]string{"namespace": "ns"}); got != 1 {
		t.Errorf("gantry_trainjob_ttl_deleted_total{namespace=ns} = %v, want 1", got)
	}
}
