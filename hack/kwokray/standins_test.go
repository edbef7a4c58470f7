package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// fakeRoutes records the local routes.
type fakeRoutes struct {
	mu     sync.Mutex
	routes []string
}

func (f *fakeRoutes) addLocal(ip string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.routes, ip) {
		f.routes = append(f.routes, ip)
	}
	return nil
}

func (f *fakeRoutes) delLocal(ip string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes = slices.DeleteFunc(f.routes, func(r string) bool { return r == ip })
	return nil
}

func (f *fakeRoutes) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.routes)
}

const ns = "default"

func node(name string, kwok bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if kwok {
		n.Annotations = map[string]string{kwokNodeAnnotation: "fake"}
	}
	return n
}

func pod(name, nodeName, ip string, labels map[string]string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid"), Labels: labels},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

func headLabels(cluster string) map[string]string {
	return map[string]string{rayv1.RayClusterLabelKey: cluster, rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode)}
}

// rayJobsCluster is the RayCluster a RayJob called job made, labelled as
// the RayJob controller labels it.
func rayJobsCluster(name, job string) *rayv1.RayCluster {
	return &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
		rayv1.RayOriginatedFromCRDLabelKey: rayv1.RayJobKind, rayv1.RayOriginatedFromCRNameLabelKey: job,
	}}}
}

func newTestStandIns(t *testing.T, objs ...client.Object) (*standIns, *fakeRoutes) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&rayv1.RayJob{}).Build()
	routes := &fakeRoutes{}
	s := newStandIns(c, routes, testr.New(t))
	s.listenHost = "127.0.0.1"
	t.Cleanup(s.stopAll)
	return s, routes
}

func reconcile(t *testing.T, s *standIns, name string) ctrl.Result {
	t.Helper()
	res, err := s.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	if err != nil {
		t.Fatalf("reconciling %s: %v", name, err)
	}
	return res
}

func served(s *standIns, name string) *head {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heads[types.NamespacedName{Namespace: ns, Name: name}]
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A head on a kwok node gets its IP routed here, a dashboard and a Serve
// proxy health check; a head on a real node is left alone; a deleted head
// loses all three.
func TestHeadsOnKwokNodesAreServed(t *testing.T) {
	s, routes := newTestStandIns(t, node("kwok-0", true), node("real-0", false),
		pod("sim-head", "kwok-0", "10.0.0.5", headLabels("sim")),
		pod("real-head", "real-0", "172.30.0.5", headLabels("real")),
		pod("pending-head", "", "", headLabels("pending")))
	for _, name := range []string{"sim-head", "real-head", "pending-head"} {
		reconcile(t, s, name)
	}
	if got := routes.list(); !slices.Equal(got, []string{"10.0.0.5"}) {
		t.Errorf("routes %v, want only the simulated head's 10.0.0.5", got)
	}
	if served(s, "real-head") != nil || served(s, "pending-head") != nil {
		t.Error("a head on a real node, or not yet bound, is served")
	}
	h := served(s, "sim-head")
	if h == nil {
		t.Fatal("the head on the kwok node is not served")
	}
	if code, body := get(t, h.dashboardURL+"/api/version"); code != http.StatusOK {
		t.Errorf("dashboard /api/version: %d %s", code, body)
	}
	if code, body := get(t, h.serveURL+rayv1.RayServeProxyHealthPath); code != http.StatusOK || body != "success" {
		t.Errorf("Serve proxy health: %d %q", code, body)
	}

	// The same Pod again: the same stand-in (its jobs survive).
	reconcile(t, s, "sim-head")
	if served(s, "sim-head") != h {
		t.Error("a second reconcile replaced the stand-in")
	}

	if err := s.c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sim-head"}}); err != nil {
		t.Fatal(err)
	}
	reconcile(t, s, "sim-head")
	if len(routes.list()) != 0 || served(s, "sim-head") != nil {
		t.Errorf("after the head's deletion: routes %v, served %v", routes.list(), served(s, "sim-head") != nil)
	}
	if _, err := http.Get(h.dashboardURL + "/api/version"); err == nil {
		t.Error("the deleted head's dashboard still answers")
	}
}

// A K8sJobMode submitter Pod on a kwok node submits its RayJob's
// entrypoint under the RayJob's submission ID, once, to the head of the
// RayJob's cluster; the simulated job ends as the RayJob's kwok
// annotations say.
func TestSubmitterPodSubmitsTheRayJob(t *testing.T) {
	job := &rayv1.RayJob{
		ObjectMeta: metav1.ObjectMeta{Name: "rj", Namespace: ns, Annotations: map[string]string{annotationRunSeconds: "0", annotationExitCode: "2"}},
		Spec:       rayv1.RayJobSpec{Entrypoint: "python main.py"},
		Status:     rayv1.RayJobStatus{JobId: "rj-abc", RayClusterName: "rj-c"},
	}
	submitterLabels := map[string]string{rayv1.RayOriginatedFromCRDLabelKey: rayv1.RayJobKind, rayv1.RayOriginatedFromCRNameLabelKey: "rj"}
	s, _ := newTestStandIns(t, node("kwok-0", true), job,
		pod("rj-c-head", "kwok-0", "10.0.0.7", headLabels("rj-c")),
		pod("rj-submitter", "kwok-0", "10.0.0.8", submitterLabels, rayv1.SubmitterContainerName))

	// Before its head is served, the submitter waits.
	if res := reconcile(t, s, "rj-submitter"); res.RequeueAfter == 0 {
		t.Error("the submitter did not wait for its head")
	}
	reconcile(t, s, "rj-c-head")
	reconcile(t, s, "rj-submitter")
	reconcile(t, s, "rj-submitter")

	h := served(s, "rj-c-head")
	dash, err := dashboard.New(dashboard.Config{URL: h.dashboardURL})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := dash.JobInfo(context.Background(), "rj-abc")
		if err != nil {
			t.Fatalf("the RayJob's submission: %v", err)
		}
		if info.Status == dashboard.JobFailed {
			if info.Entrypoint != "python main.py" || info.DriverExitCode == nil || *info.DriverExitCode != 2 {
				t.Errorf("submitted %q, exit code %v; want the RayJob's entrypoint and its kwok exit code 2", info.Entrypoint, info.DriverExitCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the simulated job is %s, want FAILED (kwok-exit-code 2)", info.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	list, err := dash.ListJobs(context.Background())
	if err != nil || len(list) != 1 {
		t.Errorf("jobs on the head: %d (%v), want the one submission", len(list), err)
	}

	// The Ray job has ended: the submitter Pod is annotated for kwok to
	// complete it (exit code 0, as `ray job logs --follow` exits).
	if res := reconcile(t, s, "rj-submitter"); res.RequeueAfter != 0 {
		t.Errorf("after the Ray job ended the submitter still waits (%v)", res.RequeueAfter)
	}
	got := &corev1.Pod{}
	if err := s.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "rj-submitter"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[annotationExitCode] != "0" || got.Annotations[annotationRunSeconds] != "0" {
		t.Errorf("submitter annotations %v, want kwok's exit code 0 and run seconds 0", got.Annotations)
	}
}

// While the Ray job runs, its submitter Pod runs too.
func TestSubmitterRunsWhileTheRayJobRuns(t *testing.T) {
	job := &rayv1.RayJob{
		ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns, Annotations: map[string]string{annotationRunSeconds: "600"}},
		Spec:       rayv1.RayJobSpec{Entrypoint: "sleep 600"},
		Status:     rayv1.RayJobStatus{JobId: "long-1", RayClusterName: "long-c"},
	}
	s, _ := newTestStandIns(t, node("kwok-0", true), job,
		pod("long-c-head", "kwok-0", "10.0.0.11", headLabels("long-c")),
		pod("long-submitter", "kwok-0", "10.0.0.12", map[string]string{
			rayv1.RayOriginatedFromCRDLabelKey: rayv1.RayJobKind, rayv1.RayOriginatedFromCRNameLabelKey: "long",
		}, rayv1.SubmitterContainerName))
	reconcile(t, s, "long-c-head")
	if res := reconcile(t, s, "long-submitter"); res.RequeueAfter == 0 {
		t.Error("the submitter of a running Ray job is not followed")
	}
	got := &corev1.Pod{}
	if err := s.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "long-submitter"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Annotations) != 0 {
		t.Errorf("the submitter of a running Ray job was annotated: %v", got.Annotations)
	}
}

// SidecarMode: the head Pod's own submitter container submits.
func TestSidecarSubmitterSubmitsFromTheHead(t *testing.T) {
	job := &rayv1.RayJob{
		ObjectMeta: metav1.ObjectMeta{Name: "side", Namespace: ns},
		Spec:       rayv1.RayJobSpec{Entrypoint: "echo hi", SubmissionMode: rayv1.SidecarMode},
		Status:     rayv1.RayJobStatus{JobId: "side-1", RayClusterName: "side-c"},
	}
	// A head Pod names only its cluster; the cluster names the RayJob.
	s, _ := newTestStandIns(t, node("kwok-0", true), job, rayJobsCluster("side-c", "side"),
		pod("side-c-head", "kwok-0", "10.0.0.9", headLabels("side-c"), "ray-head", rayv1.SubmitterContainerName))
	reconcile(t, s, "side-c-head")
	dash, err := dashboard.New(dashboard.Config{URL: served(s, "side-c-head").dashboardURL})
	if err != nil {
		t.Fatal(err)
	}
	info, err := dash.JobInfo(context.Background(), "side-1")
	if err != nil {
		t.Fatalf("the sidecar's submission: %v", err)
	}
	if info.Status != dashboard.JobRunning {
		t.Errorf("just submitted: %s, want RUNNING for the default 3 s", info.Status)
	}
}

// SidecarMode: when the Ray job ends, the head Pod is annotated for kwok
// to end its submitter container (exit code 0); the Pod itself is not
// asked to finish.
func TestSidecarSubmitterEndsWithTheRayJob(t *testing.T) {
	job := &rayv1.RayJob{
		ObjectMeta: metav1.ObjectMeta{Name: "side", Namespace: ns, Annotations: map[string]string{annotationRunSeconds: "0"}},
		Spec:       rayv1.RayJobSpec{Entrypoint: "echo hi", SubmissionMode: rayv1.SidecarMode},
		Status:     rayv1.RayJobStatus{JobId: "side-2", RayClusterName: "side-c"},
	}
	s, _ := newTestStandIns(t, node("kwok-0", true), job, rayJobsCluster("side-c", "side"),
		pod("side-c-head", "kwok-0", "10.0.0.10", headLabels("side-c"), "ray-head", rayv1.SubmitterContainerName))
	deadline := time.Now().Add(10 * time.Second)
	for reconcile(t, s, "side-c-head").RequeueAfter != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the head is still followed 10 s after a job of 0 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := &corev1.Pod{}
	if err := s.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "side-c-head"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[annotationSubmitterExitCode] != "0" {
		t.Errorf("head annotations %v, want kwok's submitter exit code 0", got.Annotations)
	}
	if _, ok := got.Annotations[annotationExitCode]; ok {
		t.Errorf("the head Pod was asked to finish: %v", got.Annotations)
	}
	if _, ok := got.Annotations[annotationRunSeconds]; ok {
		t.Errorf("the head Pod was asked to finish: %v", got.Annotations)
	}
}
