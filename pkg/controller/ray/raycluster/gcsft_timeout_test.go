package raycluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// KubeRay v1.6.2's names (utils.RayClusterGCSFTDeletionTimeoutAnnotation,
// utils.ForceDeletedStuckCluster), spelt out so these tests state the
// contract rather than Gantry's constants.
const (
	kubeRayGCSFTDeletionTimeoutAnnotation = "ray.io/gcs-ft-deletion-timeout"
	kubeRayForceDeletedStuckCluster       = "ForceDeletedStuckCluster"
	// keepFinalizer keeps the deleted RayCluster readable once Gantry's
	// finalizer is gone.
	keepFinalizer = "example.com/keep"
)

var gcsftDeletedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type gcsftDeletion struct {
	r        *Reconciler
	c        client.Client
	clock    *clocktesting.FakeClock
	recorder *clientevents.FakeRecorder
	key      client.ObjectKey
}

// newGCSFTDeletion is a GCS fault-tolerant RayCluster deleted at
// gcsftDeletedAt with its head already gone, the objects objs (its cleanup
// Job, if any) and a reconciler whose clock reads gcsftDeletedAt+elapsed.
func newGCSFTDeletion(t *testing.T, rc *rayv1.RayCluster, elapsed time.Duration, funcs *interceptor.Funcs, objs ...client.Object) *gcsftDeletion {
	t.Helper()
	rc.Finalizers = []string{rayv1.GCSFaultToleranceRedisCleanupFinalizer, keepFinalizer}
	rc.DeletionTimestamp = &metav1.Time{Time: gcsftDeletedAt}
	scheme := testScheme(t)
	var c client.Client = fakeClientBuilder(scheme).WithObjects(append(objs, rc)...).Build()
	if funcs != nil {
		c = interceptor.NewClient(c.(client.WithWatch), *funcs)
	}
	recorder := clientevents.NewFakeRecorder(100)
	r := newReconciler(c, c, recorder, nil, Config{EnableGCSFTRedisCleanup: true})
	fc := clocktesting.NewFakeClock(gcsftDeletedAt.Add(elapsed))
	r.clock = fc
	return &gcsftDeletion{r: r, c: c, clock: fc, recorder: recorder, key: client.ObjectKeyFromObject(rc)}
}

// reconcile runs the finalizer step once on a fresh read.
func (d *gcsftDeletion) reconcile(t *testing.T) (ctrl.Result, bool, error) {
	t.Helper()
	cluster := &rayv1.RayCluster{}
	if err := d.c.Get(context.Background(), d.key, cluster); err != nil {
		t.Fatal(err)
	}
	return d.r.reconcileGCSFTFinalizer(context.Background(), cluster)
}

func (d *gcsftDeletion) hasFinalizer(t *testing.T) bool {
	t.Helper()
	cluster := &rayv1.RayCluster{}
	if err := d.c.Get(context.Background(), d.key, cluster); err != nil {
		t.Fatal(err)
	}
	return containsString(cluster.Finalizers, rayv1.GCSFaultToleranceRedisCleanupFinalizer)
}

func (d *gcsftDeletion) events() []string {
	var out []string
	for {
		select {
		case e := <-d.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func cleanupJob(rc *rayv1.RayCluster, status batchv1.JobStatus) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: RedisCleanupJobName(rc), Namespace: rc.Namespace},
		Status:     status,
	}
}

func jobCondition(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.Time{Time: gcsftDeletedAt}}
}

func ftCluster() *rayv1.RayCluster {
	return raytesting.MakeRayCluster("ft", "ns").GCSFaultTolerance("redis:6379").Obj()
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// A failed cleanup Job releases the cluster at once, as KubeRay's
// utils.IsJobFinished does for Failed and FailureTarget, with a Warning
// naming the Redis storage namespace to clean by hand.
func TestGCSFTFailedCleanupJobRemovesFinalizer(t *testing.T) {
	for name, cond := range map[string]batchv1.JobCondition{
		"backoffLimit exhausted":   jobCondition(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded),
		"activeDeadline exceeded":  jobCondition(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded),
		"failure target (pending)": jobCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded),
	} {
		t.Run(name, func(t *testing.T) {
			rc := ftCluster()
			d := newGCSFTDeletion(t, rc, 30*time.Second, nil,
				cleanupJob(rc, batchv1.JobStatus{Failed: 1, Conditions: []batchv1.JobCondition{cond}}))
			if _, handled, err := d.reconcile(t); !handled || err != nil {
				t.Fatalf("handled=%v err=%v", handled, err)
			}
			if d.hasFinalizer(t) {
				t.Error("the finalizer stayed after the cleanup Job failed")
			}
			if ev := d.events(); !hasEvent(ev, "Warning RedisCleanupFailed") {
				t.Errorf("events = %q, want a RedisCleanupFailed Warning", ev)
			}
		})
	}
}

// A cleanup Job that never finishes (its Pod in ImagePullBackOff or
// unschedulable, its Pods refused by a quota, the Job suspended by a queue)
// holds the cluster until KubeRay's 300 s after the deletionTimestamp, no
// longer: then the finalizer goes, with KubeRay's ForceDeletedStuckCluster
// Warning.
func TestGCSFTStuckCleanupJobTimesOut(t *testing.T) {
	for name, status := range map[string]batchv1.JobStatus{
		"pod pending (image pull, unschedulable)": {Active: 1, StartTime: &metav1.Time{Time: gcsftDeletedAt}},
		"never started (quota, suspended)":        {},
	} {
		t.Run(name, func(t *testing.T) {
			rc := ftCluster()
			d := newGCSFTDeletion(t, rc, 30*time.Second, nil, cleanupJob(rc, status))

			res, handled, err := d.reconcile(t)
			if !handled || err != nil {
				t.Fatalf("handled=%v err=%v", handled, err)
			}
			if !d.hasFinalizer(t) {
				t.Fatal("the finalizer was removed before the timeout")
			}
			// The Job is owned, so its completion triggers a reconcile: the
			// only wake-up needed is the deadline, not a 2 s poll.
			if want := 270 * time.Second; res.RequeueAfter != want {
				t.Errorf("RequeueAfter = %v, want %v (the deadline)", res.RequeueAfter, want)
			}

			d.clock.SetTime(gcsftDeletedAt.Add(299 * time.Second))
			res, _, err = d.reconcile(t)
			if err != nil || !d.hasFinalizer(t) {
				t.Fatalf("1 s before the timeout: err=%v, finalizer kept=%v", err, d.hasFinalizer(t))
			}
			if res.RequeueAfter != time.Second {
				t.Errorf("RequeueAfter = %v 1 s before the deadline, want 1s", res.RequeueAfter)
			}
			if ev := d.events(); len(ev) != 0 {
				t.Errorf("events before the timeout = %q, want none", ev)
			}

			d.clock.SetTime(gcsftDeletedAt.Add(300 * time.Second))
			res, handled, err = d.reconcile(t)
			if !handled || err != nil {
				t.Fatalf("at the timeout: handled=%v err=%v", handled, err)
			}
			if d.hasFinalizer(t) {
				t.Fatal("the finalizer stayed past the timeout")
			}
			if res.RequeueAfter != 0 {
				t.Errorf("RequeueAfter = %v after the finalizer went, want 0", res.RequeueAfter)
			}
			ev := d.events()
			if !hasEvent(ev, "Warning "+kubeRayForceDeletedStuckCluster+" ") {
				t.Fatalf("events = %q, want a %s Warning", ev, kubeRayForceDeletedStuckCluster)
			}
			if !strings.Contains(strings.Join(ev, "\n"), `"`+podspec.ExternalStorageNamespace(rc)+`"`) {
				t.Errorf("events = %q, want the Redis storage namespace %q named", ev, podspec.ExternalStorageNamespace(rc))
			}
		})
	}
}

// A cleanup Job the API server refuses (a ResourceQuota on Jobs, a
// webhook) is retried until the timeout, then the cluster goes.
func TestGCSFTRefusedCleanupJobTimesOut(t *testing.T) {
	refuse := &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*batchv1.Job); ok {
			return apierrors.NewForbidden(batchv1.Resource("jobs"), obj.GetName(), errors.New("exceeded quota: count/jobs.batch"))
		}
		return c.Create(ctx, obj, opts...)
	}}
	d := newGCSFTDeletion(t, ftCluster(), 10*time.Second, refuse)
	if _, _, err := d.reconcile(t); err == nil || !d.hasFinalizer(t) {
		t.Fatalf("before the timeout: err=%v (want the refusal), finalizer kept=%v", err, d.hasFinalizer(t))
	}
	if ev := d.events(); !hasEvent(ev, "Warning "+string(rayv1.FailedToCreateRedisCleanupJob)) {
		t.Errorf("events = %q, want FailedToCreateRedisCleanupJob", ev)
	}

	d.clock.SetTime(gcsftDeletedAt.Add(5 * time.Minute))
	if _, handled, err := d.reconcile(t); !handled || err != nil {
		t.Fatalf("at the timeout: handled=%v err=%v", handled, err)
	}
	if d.hasFinalizer(t) {
		t.Error("the finalizer stayed past the timeout")
	}
	if ev := d.events(); !hasEvent(ev, "Warning "+kubeRayForceDeletedStuckCluster) {
		t.Errorf("events = %q, want a %s Warning", ev, kubeRayForceDeletedStuckCluster)
	}
}

// The timeout is KubeRay's per-cluster annotation, in whole seconds; a
// missing, unparsable or non-positive value means the 300 s default. It is
// read on every reconcile, so lowering it on a stuck cluster takes effect.
func TestGCSFTDeletionTimeoutAnnotation(t *testing.T) {
	for _, tc := range []struct {
		value string // "" leaves the annotation out
		want  time.Duration
	}{
		{"", 300 * time.Second},
		{"60", 60 * time.Second},
		{"3600", time.Hour},
		{"0", 300 * time.Second},
		{"-5", 300 * time.Second},
		{"1m", 300 * time.Second},
		{"abc", 300 * time.Second},
	} {
		t.Run("value="+tc.value, func(t *testing.T) {
			w := raytesting.MakeRayCluster("ft", "ns").GCSFaultTolerance("redis:6379")
			if tc.value != "" {
				w = w.Annotation(kubeRayGCSFTDeletionTimeoutAnnotation, tc.value)
			}
			rc := w.Obj()
			d := newGCSFTDeletion(t, rc, tc.want-time.Second, nil, cleanupJob(rc, batchv1.JobStatus{Active: 1}))
			if res, _, err := d.reconcile(t); err != nil || !d.hasFinalizer(t) || res.RequeueAfter != time.Second {
				t.Fatalf("1 s before %v: err=%v finalizer kept=%v RequeueAfter=%v", tc.want, err, d.hasFinalizer(t), res.RequeueAfter)
			}
			d.clock.SetTime(gcsftDeletedAt.Add(tc.want))
			if _, _, err := d.reconcile(t); err != nil || d.hasFinalizer(t) {
				t.Fatalf("at %v: err=%v finalizer kept=%v", tc.want, err, d.hasFinalizer(t))
			}
		})
	}
}

// Past the timeout, a Job that did finish reports how it finished rather
// than a stuck cleanup: a completed one emits no Warning.
func TestGCSFTCompletedCleanupJobPastTimeoutIsNotStuck(t *testing.T) {
	rc := ftCluster()
	d := newGCSFTDeletion(t, rc, time.Hour, nil,
		cleanupJob(rc, batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{jobCondition(batchv1.JobComplete, "")}}))
	if _, _, err := d.reconcile(t); err != nil || d.hasFinalizer(t) {
		t.Fatalf("err=%v finalizer kept=%v", err, d.hasFinalizer(t))
	}
	if ev := d.events(); hasEvent(ev, "Warning") {
		t.Errorf("events = %q, want no Warning for a completed cleanup", ev)
	}
}

// headPod is the cluster's head Pod, deleted at deletedAt (the end of its
// termination grace period, as the API server sets a Pod's
// deletionTimestamp) and held by a finalizer.
func headPod(rc *rayv1.RayCluster, deletedAt time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "ft-head", Namespace: rc.Namespace,
		Labels:            map[string]string{rayv1.RayClusterLabelKey: rc.Name, rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode)},
		Finalizers:        []string{keepFinalizer},
		DeletionTimestamp: &metav1.Time{Time: deletedAt},
	}}
}

// A head still in its termination grace period holds the cluster, even
// past the timeout: its GCS may still write to Redis, and a queue must not
// release the cluster's quota while it runs.
func TestGCSFTTimeoutWaitsForATerminatingHead(t *testing.T) {
	rc := ftCluster()
	d := newGCSFTDeletion(t, rc, time.Hour, nil, headPod(rc, gcsftDeletedAt.Add(2*time.Hour)))
	res, _, err := d.reconcile(t)
	if err != nil || !d.hasFinalizer(t) {
		t.Fatalf("err=%v finalizer kept=%v", err, d.hasFinalizer(t))
	}
	if res.RequeueAfter != headTerminationRequeue {
		t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, headTerminationRequeue)
	}
}

// A head Pod stuck Terminating (its node gone, a finalizer nobody removes)
// must not hold the cluster forever. KubeRay v1.7.0 checks the timeout
// only once the head is gone, so there the cluster stays Terminating for
// as long as the head does. Gantry lets the head's grace period run out:
// past both the timeout and the head's deletionTimestamp, the finalizer
// goes with ForceDeletedStuckCluster, naming the head and the Redis
// storage namespace to clean by hand. No cleanup Job is started while the
// head exists.
func TestGCSFTStuckHeadDoesNotHoldTheClusterForever(t *testing.T) {
	rc := ftCluster()
	d := newGCSFTDeletion(t, rc, 299*time.Second, nil, headPod(rc, gcsftDeletedAt.Add(30*time.Second)))
	res, _, err := d.reconcile(t)
	if err != nil || !d.hasFinalizer(t) {
		t.Fatalf("before the timeout: err=%v finalizer kept=%v", err, d.hasFinalizer(t))
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > headTerminationRequeue {
		t.Errorf("before the timeout: RequeueAfter = %v, want at most %v", res.RequeueAfter, headTerminationRequeue)
	}

	for _, elapsed := range []time.Duration{300 * time.Second, 24 * time.Hour} {
		d.clock.SetTime(gcsftDeletedAt.Add(elapsed))
		if _, _, err := d.reconcile(t); err != nil {
			t.Fatalf("%v after the deletion: %v", elapsed, err)
		}
		if !d.hasFinalizer(t) {
			break
		}
	}
	if d.hasFinalizer(t) {
		t.Fatal("the finalizer stayed a day after the deletion: the head Pod stuck Terminating holds the cluster forever")
	}
	ev := strings.Join(d.events(), "\n")
	if !strings.Contains(ev, "Warning "+kubeRayForceDeletedStuckCluster+" ") || !strings.Contains(ev, "ft-head") ||
		!strings.Contains(ev, `"`+podspec.ExternalStorageNamespace(rc)+`"`) {
		t.Errorf("events = %q, want a %s Warning naming the head Pod and the Redis storage namespace", ev, kubeRayForceDeletedStuckCluster)
	}
	if err := d.c.Get(context.Background(), client.ObjectKey{Namespace: rc.Namespace, Name: RedisCleanupJobName(rc)}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("a cleanup Job was created while the head Pod exists (err=%v)", err)
	}
}
