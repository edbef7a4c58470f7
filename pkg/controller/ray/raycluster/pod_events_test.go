package raycluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// reconcileOnce runs one reconcile of rc over objs and returns the
// cluster's Pods afterwards and the events, "<type> <reason> <note>".
func reconcileOnce(t *testing.T, cfg Config, rc *rayv1.RayCluster, objs ...client.Object) ([]corev1.Pod, []string) {
	t.Helper()
	c := fakeClientBuilder(testScheme(t)).WithObjects(append(objs, rc)...).
		WithStatusSubresource(&rayv1.RayCluster{}).Build()
	recorder := clientevents.NewFakeRecorder(100)
	r := newReconciler(c, c, recorder, nil, cfg)
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rc)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(rc.Namespace)); err != nil {
		t.Fatal(err)
	}
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	return pods.Items, events
}

// eventsWithReason are the events of type Normal and reason.
func eventsWithReason(events []string, reason rayv1.EventReason) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, "Normal "+string(reason)+" ") {
			out = append(out, e)
		}
	}
	return out
}

// TestNewClusterEventsHaveKubeRayReasons: a new cluster's Pods and Service
// are reported under KubeRay's reasons (utils.CreatedHeadPod,
// CreatedWorkerPod, CreatedService), which alerts filter on, one event per
// reason naming every Pod (KubeRay records one per Pod, "Created worker Pod
// <ns>/<name>"), not under one reason of Gantry's own for the reconcile.
func TestNewClusterEventsHaveKubeRayReasons(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	rc := raytesting.MakeRayCluster("rc", "ns").UID("u1").WorkerGroup("cpu", 3).WorkerGroup("gpu", 2).Obj()
	pods, events := reconcileOnce(t, cfg, rc)
	if len(pods) != 6 {
		t.Fatalf("%d Pods after the first reconcile, want 6", len(pods))
	}
	for _, reason := range []rayv1.EventReason{rayv1.CreatedHeadPod, rayv1.CreatedWorkerPod, rayv1.CreatedService} {
		if got := eventsWithReason(events, reason); len(got) != 1 {
			t.Errorf("%d Normal %s events, want 1; events:\n%s", len(got), reason, strings.Join(events, "\n"))
		}
	}
	for _, p := range pods {
		reason := rayv1.CreatedWorkerPod
		if p.Labels[rayv1.RayNodeTypeLabelKey] == string(rayv1.HeadNode) {
			reason = rayv1.CreatedHeadPod
		}
		if got := eventsWithReason(events, reason); len(got) != 1 || !strings.Contains(got[0], p.Name) {
			t.Errorf("no %s event names Pod %s; events:\n%s", reason, p.Name, strings.Join(events, "\n"))
		}
	}
}

// TestSuspendedWorkerGroupEventIsDeletedWorkerPod: KubeRay v1.7.0
// reports the Pods of a suspended worker group as DeletedWorkerPod
// (DeletedPod is for the whole cluster's: suspension, a Recreate upgrade).
func TestSuspendedWorkerGroupEventIsDeletedWorkerPod(t *testing.T) {
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	cfg.AllowWorkerGroupSuspend = true
	rc := raytesting.MakeRayCluster("rc", "ns").UID("u1").WorkerGroup("cpu", 2).Obj()
	rc.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true)
	head := podspec.BuildHeadPod(rc, cfg.Build)
	head.Name = "rc-head"
	objs := []client.Object{readyPod(head)}
	for i := range 2 {
		w := podspec.BuildWorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], podspec.WorkerReplica{Index: i}, cfg.Build)
		w.Name = fmt.Sprintf("rc-cpu-worker-%d", i)
		objs = append(objs, readyPod(w))
	}
	pods, events := reconcileOnce(t, cfg, rc, objs...)
	if len(pods) != 1 {
		t.Fatalf("%d Pods left, want the head only", len(pods))
	}
	got := eventsWithReason(events, rayv1.DeletedWorkerPod)
	if len(got) != 1 || !strings.Contains(got[0], "rc-cpu-worker-0") || !strings.Contains(got[0], "rc-cpu-worker-1") {
		t.Errorf("DeletedWorkerPod events %q, want one naming both Pods; events:\n%s", got, strings.Join(events, "\n"))
	}
	if got := eventsWithReason(events, rayv1.DeletedPod); len(got) != 0 {
		t.Errorf("DeletedPod events %q for a suspended worker group", got)
	}
}

// TestPodEventMessageFitsOneEvent: the API server refuses an
// events.k8s.io/v1 note over 1 KiB, and the event is lost. A reconcile
// that creates or deletes many Pods in several groups names as many as
// fit, in order, says how many more there are, and stays within the limit.
func TestPodEventMessageFitsOneEvent(t *testing.T) {
	long := func(group string, n int) podNote {
		names := make([]string, n)
		for i := range names {
			// 63 characters, the longest a generated Pod name gets.
			names[i] = fmt.Sprintf("%s-%s-worker-%05d", strings.Repeat("c", 41), group, i)
		}
		return podNote{what: fmt.Sprintf("Created %d worker Pods in group %s", n, group), names: names}
	}
	for _, tc := range []struct {
		name      string
		notes     []podNote
		wantNames int
		wantText  []string
	}{
		{
			name:      "few Pods: all named",
			notes:     []podNote{{what: "Created 2 worker Pods in group cpu", names: []string{"rc-cpu-worker-a", "rc-cpu-worker-b"}}},
			wantNames: 2,
			wantText:  []string{"Created 2 worker Pods in group cpu: rc-cpu-worker-a, rc-cpu-worker-b"},
		},
		{
			name:      "two groups of 20 long names",
			notes:     []podNote{long("cpu", 20), long("gpu", 20)},
			wantNames: 15,
			wantText:  []string{"Created 20 worker Pods in group cpu: ", " and 5 more; Created 20 worker Pods in group gpu"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := podEventMessage(tc.notes, maxEventNote)
			if len(msg) > maxEventNote {
				t.Fatalf("%d bytes, over the %d the API server accepts: %q", len(msg), maxEventNote, msg)
			}
			named := 0
			for _, n := range tc.notes {
				for _, name := range n.names {
					if strings.Contains(msg, name) {
						named++
					}
				}
			}
			if named != tc.wantNames {
				t.Errorf("%d Pods named, want %d: %q", named, tc.wantNames, msg)
			}
			for _, want := range tc.wantText {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %q", want, msg)
				}
			}
		})
	}
	var many []podNote
	for i := range 30 {
		many = append(many, long(fmt.Sprintf("g%02d", i), 1))
	}
	if msg := podEventMessage(many, maxEventNote); len(msg) > maxEventNote || !strings.HasSuffix(msg, "...") {
		t.Errorf("30 groups: %d bytes, want at most %d, cut with ...: %q", len(msg), maxEventNote, msg)
	}
}
