package rayjob_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/controller/ray"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

var (
	k8s client.Client
	// dashURL is the stand-in dashboard every test's cluster points at
	// (gantry.dev/ray-dashboard-url); its jobs are real processes.
	dashURL string
	dash    *dashboard.Client
)

// TestMain runs one API server, one stand-in Ray dashboard and one Gantry
// manager with the Ray family (RayCluster and RayJob controllers) under
// the real manager wiring. There is no kubelet and no Job controller:
// tests move Pods to Ready and finish submitter Jobs themselves.
func TestMain(m *testing.M) {
	env, err := testenv.StartE(testenv.Options{AddToScheme: ray.Integration().AddToScheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	jobs := standin.NewJobs("127.0.0.1:6379", nil)
	srv := httptest.NewServer(standin.NewDashboard(jobs, "", "").Handler())
	dashURL = srv.URL
	if dash, err = dashboard.New(dashboard.Config{URL: srv.URL}); err != nil {
		panic(err)
	}
	reg := &workload.Registry{}
	reg.MustRegister(ray.Integration())
	opts, err := app.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0",
		"--feature-gates=RayDashboardURLOverride=true"}, reg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, env.Config, opts, reg) }()
	k8s = env.Client
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	srv.Close()
	jobs.Shutdown()
	_ = env.Stop()
	os.Exit(code)
}

const timeout = 30 * time.Second

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rj-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// makeJob is a RayJob whose cluster's dashboard is the stand-in.
func makeJob(name, ns, entrypoint string) *raytesting.RayJobWrapper {
	return raytesting.MakeRayJob(name, ns, entrypoint).Annotation(rayv1.AnnotationRayDashboardURL, dashURL)
}

func create(t *testing.T, job *rayv1.RayJob) *rayv1.RayJob {
	t.Helper()
	job.UID = ""
	if err := k8s.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	return job
}

func get(g Gomega, job *rayv1.RayJob) *rayv1.RayJob {
	out := &rayv1.RayJob{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(job), out)).To(Succeed())
	return out
}

// readyCluster waits for the RayJob's cluster and marks its Pods Ready,
// as a kubelet would; it returns the cluster's name.
func readyCluster(t *testing.T, job *rayv1.RayJob) string {
	t.Helper()
	return readyClusterNot(t, job, "")
}

// readyClusterNot is readyCluster for a cluster not named previous (a
// retry's).
func readyClusterNot(t *testing.T, job *rayv1.RayJob, previous string) string {
	t.Helper()
	g := NewWithT(t)
	var name string
	g.Eventually(func(g Gomega) {
		name = get(g, job).Status.RayClusterName
		g.Expect(name).NotTo(BeEmpty())
		g.Expect(name).NotTo(Equal(previous))
	}, timeout).Should(Succeed())
	// Only the Pods are waited for: once they are Ready the job may run,
	// end and (on a retry) delete the cluster before a poll sees it Ready.
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(job.Namespace), client.MatchingLabels{rayv1.RayClusterLabelKey: name})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2), "Pods of %s; events %v", name, eventNotes(g, job))
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase == corev1.PodRunning {
				continue
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = fmt.Sprintf("10.0.0.%d", i+2)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			g.Expect(k8s.Status().Update(context.Background(), p)).To(Succeed())
		}
	}, timeout).Should(Succeed())
	return name
}

func waitFor(t *testing.T, job *rayv1.RayJob, state rayv1.JobDeploymentStatus) *rayv1.RayJob {
	t.Helper()
	var out *rayv1.RayJob
	NewWithT(t).Eventually(func(g Gomega) {
		out = get(g, job)
		g.Expect(out.Status.JobDeploymentStatus).To(Equal(state), "status %+v", out.Status)
	}, timeout).Should(Succeed())
	return out
}

func clusterExists(g Gomega, ns, name string) bool {
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rayv1.RayCluster{})
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

func eventReasons(g Gomega, job *rayv1.RayJob) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(job.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == job.Name && e.Regarding.Kind == rayv1.RayJobKind {
			out = append(out, e.Reason)
		}
	}
	return out
}

// eventActions lists the RayJob's events as "<reason> <action>".
func eventActions(g Gomega, job *rayv1.RayJob) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(job.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == job.Name && e.Regarding.Kind == rayv1.RayJobKind {
			out = append(out, e.Reason+" "+e.Action)
		}
	}
	return out
}

func TestHTTPModeRunsTheJobToComplete(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("http", ns, "echo hello").Mode(rayv1.HTTPMode).Label("team", "a").Obj())
	cluster := readyCluster(t, job)
	done := waitFor(t, job, rayv1.JobDeploymentStatusComplete)
	g := NewWithT(t)
	g.Expect(done.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
	g.Expect(done.Status.JobId).To(HavePrefix("http-"))
	g.Expect(cluster).To(HavePrefix("http-"))
	g.Expect(done.Status.DashboardURL).To(Equal(cluster + "-head-svc." + ns + ".svc.cluster.local:8265"))
	g.Expect(ptr.Deref(done.Status.Succeeded, -1)).To(BeEquivalentTo(1))
	g.Expect(ptr.Deref(done.Status.Failed, -1)).To(BeEquivalentTo(0))
	g.Expect(done.Status.EndTime).NotTo(BeNil())
	g.Expect(done.Status.RayJobStatusInfo.StartTime).NotTo(BeNil())
	g.Expect(done.Finalizers).To(ContainElement(rayv1.RayJobStopJobFinalizer))

	rc := &rayv1.RayCluster{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cluster}, rc)).To(Succeed())
	g.Expect(rc.Labels).To(HaveKeyWithValue(rayv1.RayOriginatedFromCRNameLabelKey, "http"))
	g.Expect(rc.Labels).To(HaveKeyWithValue(rayv1.RayOriginatedFromCRDLabelKey, "RayJob"))
	g.Expect(rc.Labels).To(HaveKeyWithValue(rayv1.RayJobSubmissionModeLabelKey, "HTTPMode"))
	g.Expect(rc.Labels).To(HaveKeyWithValue("team", "a"))
	g.Expect(metav1.IsControlledBy(rc, done)).To(BeTrue())

	svc := &corev1.Service{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "http-head-svc"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Selector).To(HaveKeyWithValue(rayv1.RayClusterLabelKey, cluster))
	g.Expect(metav1.IsControlledBy(svc, done)).To(BeTrue())

	info, err := dash.JobInfo(context.Background(), done.Status.JobId)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Entrypoint).To(Equal("echo hello"))
	g.Eventually(func(g Gomega) { g.Expect(eventReasons(g, job)).To(ContainElement(string(rayv1.CreatedRayCluster))) }, timeout).Should(Succeed())
	// KubeRay's action for each reason (rayjob_controller.go:981, :709).
	g.Eventually(func(g Gomega) {
		g.Expect(eventActions(g, job)).To(ContainElements("CreatedRayCluster Create", "CreatedService Create"))
	}, timeout).Should(Succeed())
}

// finishSubmitter does what the Job controller would once the submitter's
// `ray job submit` returned: the Job's status says it ended.
func finishSubmitter(t *testing.T, job *rayv1.RayJob, ok bool) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		sub := &batchv1.Job{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(job), sub)).To(Succeed())
		now := metav1.Now()
		sub.Status.StartTime = &now
		if ok {
			sub.Status.CompletionTime = &now
			sub.Status.Succeeded = 1
			sub.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			}
		} else {
			sub.Status.Failed = 3
			sub.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
			}
		}
		g.Expect(k8s.Status().Update(context.Background(), sub)).To(Succeed())
	}, timeout).Should(Succeed())
}

func TestK8sJobModeSubmitterJobSubmitsAndTheJobCompletes(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("k8s", ns, "echo from-submitter").Obj())
	readyCluster(t, job)
	running := waitFor(t, job, rayv1.JobDeploymentStatusRunning)
	g := NewWithT(t)
	sub := &batchv1.Job{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(job), sub)).To(Succeed())
	g.Expect(metav1.IsControlledBy(sub, running)).To(BeTrue())
	g.Expect(sub.Labels).To(HaveKeyWithValue(rayv1.RayOriginatedFromCRNameLabelKey, "k8s"))
	g.Expect(ptr.Deref(sub.Spec.BackoffLimit, -1)).To(BeEquivalentTo(2))
	c := sub.Spec.Template.Spec.Containers[0]
	g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: rayv1.RayJobSubmissionIDEnv, Value: running.Status.JobId}))
	g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: rayv1.RayDashboardAddressEnv, Value: running.Status.DashboardURL}))
	g.Expect(c.Args).To(HaveLen(1))
	g.Expect(c.Args[0]).To(ContainSubstring("--submission-id " + running.Status.JobId))

	// What the submitter's `ray job submit` does.
	_, err := dash.SubmitJob(context.Background(), dashboard.JobRequest{Entrypoint: "echo from-submitter", SubmissionID: running.Status.JobId})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) { g.Expect(get(g, job).Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded)) }, timeout).Should(Succeed())
	// The Ray job ended, the submitter has not: still Running.
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, job).Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusRunning))
	}, 4*time.Second).Should(Succeed())
	finishSubmitter(t, job, true)
	waitFor(t, job, rayv1.JobDeploymentStatusComplete)
}

// asKubeRaysSubmitter relabels the RayJob's submitter Job as KubeRay's
// operator labels the Jobs it creates (created-by kuberay-operator, no
// managed-by), as a RayJob KubeRay was running before the move to Gantry
// has it: Gantry's cache no longer holds it. One attempt, for an
// Eventually.
func asKubeRaysSubmitter(g Gomega, job *rayv1.RayJob) {
	sub := &batchv1.Job{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(job), sub)).To(Succeed())
	delete(sub.Labels, "app.kubernetes.io/managed-by")
	sub.Labels["app.kubernetes.io/created-by"] = "kuberay-operator"
	g.Expect(k8s.Update(context.Background(), sub)).To(Succeed())
}

// A K8sJobMode RayJob KubeRay was running when Gantry took over: its
// submitter Job (KubeRay's, not in Gantry's cache) is taken over and
// followed to the end.
func TestKubeRaysRunningSubmitterIsTakenOverAndTheJobCompletes(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("migrated", ns, "echo moved").Obj())
	readyCluster(t, job)
	running := waitFor(t, job, rayv1.JobDeploymentStatusRunning)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) { asKubeRaysSubmitter(g, job) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		sub := &batchv1.Job{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(job), sub)).To(Succeed())
		g.Expect(sub.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"), "KubeRay's submitter is taken over")
	}, timeout).Should(Succeed())
	_, err := dash.SubmitJob(context.Background(), dashboard.JobRequest{Entrypoint: "echo moved", SubmissionID: running.Status.JobId})
	g.Expect(err).NotTo(HaveOccurred())
	finishSubmitter(t, job, true)
	waitFor(t, job, rayv1.JobDeploymentStatusComplete)
}

// Suspending such a RayJob deletes KubeRay's submitter Job too, so that
// the resumed RayJob's submitter is a new one.
func TestSuspendingDeletesKubeRaysSubmitter(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("migrated-suspend", ns, "sleep 60").ShutdownAfterJobFinishes(0).Obj())
	readyCluster(t, job)
	waitFor(t, job, rayv1.JobDeploymentStatusRunning)
	// Suspend in the same write as the relabelling's aftermath: the
	// RayJob must not see its Job again through its own cache first.
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		asKubeRaysSubmitter(g, job)
		cur := get(g, job)
		cur.Spec.Suspend = true
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	waitFor(t, job, rayv1.JobDeploymentStatusSuspended)
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), &batchv1.Job{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "KubeRay's submitter Job: %v", err)
	}, timeout).Should(Succeed())
}

func TestFailedSubmitterFailsTheRayJob(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("subfail", ns, "true").Obj())
	readyCluster(t, job)
	waitFor(t, job, rayv1.JobDeploymentStatusRunning)
	finishSubmitter(t, job, false)
	failed := waitFor(t, job, rayv1.JobDeploymentStatusFailed)
	g := NewWithT(t)
	g.Expect(failed.Status.Reason).To(Equal(rayv1.SubmissionFailed))
	g.Expect(failed.Status.Message).To(ContainSubstring("BackoffLimitExceeded"))
}

func TestFailingJobIsRetriedOnANewClusterThenFails(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("retry", ns, "exit 3").Mode(rayv1.HTTPMode).BackoffLimit(1).Obj())
	first := readyCluster(t, job)
	second := readyClusterNot(t, job, first)
	g := NewWithT(t)
	g.Expect(clusterExists(g, job.Namespace, first)).To(BeFalse(), "the failed attempt's cluster is deleted before the retry")
	failed := waitFor(t, job, rayv1.JobDeploymentStatusFailed)
	g.Expect(failed.Status.Reason).To(Equal(rayv1.AppFailed))
	g.Expect(failed.Status.JobStatus).To(Equal(rayv1.JobStatusFailed))
	g.Expect(ptr.Deref(failed.Status.Failed, -1)).To(BeEquivalentTo(2))
	g.Expect(failed.Status.RayClusterName).To(Equal(second))
}

func TestShutdownAfterJobFinishesDeletesTheCluster(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("shutdown", ns, "true").Mode(rayv1.HTTPMode).ShutdownAfterJobFinishes(1).Obj())
	cluster := readyCluster(t, job)
	waitFor(t, job, rayv1.JobDeploymentStatusComplete)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) { g.Expect(clusterExists(g, ns, cluster)).To(BeFalse()) }, timeout).Should(Succeed())
	// The RayJob stays, with its record.
	g.Expect(get(g, job).Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
}

func TestDeleteWorkersRuleSuspendsEveryWorkerGroup(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("workers", ns, "true").Mode(rayv1.HTTPMode).DeletionRule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 0).Obj())
	cluster := readyCluster(t, job)
	waitFor(t, job, rayv1.JobDeploymentStatusComplete)
	NewWithT(t).Eventually(func(g Gomega) {
		rc := &rayv1.RayCluster{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cluster}, rc)).To(Succeed())
		g.Expect(ptr.Deref(rc.Spec.WorkerGroupSpecs[0].Suspend, false)).To(BeTrue())
	}, timeout).Should(Succeed())
}

func TestSuspendedRayJobCreatesNothingUntilResumed(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("queued", ns, "true").Mode(rayv1.HTTPMode).ShutdownAfterJobFinishes(0).Suspend(true).Obj())
	suspended := waitFor(t, job, rayv1.JobDeploymentStatusSuspended)
	g := NewWithT(t)
	g.Expect(suspended.Status.RayClusterName).To(BeEmpty())
	var clusters rayv1.RayClusterList
	g.Expect(k8s.List(context.Background(), &clusters, client.InNamespace(ns))).To(Succeed())
	g.Expect(clusters.Items).To(BeEmpty())

	g.Eventually(func(g Gomega) {
		cur := get(g, job)
		cur.Spec.Suspend = false
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	readyCluster(t, job)
	waitFor(t, job, rayv1.JobDeploymentStatusComplete)
}

func TestSuspendingARunningRayJobDeletesItsClusterAndSubmitter(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("suspend", ns, "sleep 60").ShutdownAfterJobFinishes(0).Obj())
	cluster := readyCluster(t, job)
	waitFor(t, job, rayv1.JobDeploymentStatusRunning)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := get(g, job)
		cur.Spec.Suspend = true
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	suspended := waitFor(t, job, rayv1.JobDeploymentStatusSuspended)
	g.Expect(suspended.Status.JobId).To(BeEmpty())
	g.Expect(clusterExists(g, ns, cluster)).To(BeFalse())
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), &batchv1.Job{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "submitter Job: %v", err)
}

func TestDeletingARunningRayJobStopsItsRayJob(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("stop", ns, "sleep 60").Mode(rayv1.HTTPMode).Obj())
	readyCluster(t, job)
	g := NewWithT(t)
	var id string
	g.Eventually(func(g Gomega) {
		cur := get(g, job)
		g.Expect(cur.Status.JobStatus).To(Equal(rayv1.JobStatusRunning))
		id = cur.Status.JobId
	}, timeout).Should(Succeed())
	g.Expect(k8s.Delete(context.Background(), job)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), &rayv1.RayJob{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		info, err := dash.JobInfo(context.Background(), id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Status).To(BeEquivalentTo(rayv1.JobStatusStopped))
	}, timeout).Should(Succeed())
}

func TestClusterSelectorClusterIsNeverDeleted(t *testing.T) {
	ns := newNamespace(t)
	rc := raytesting.MakeRayCluster("shared", ns).WorkerGroup("cpu", 1).Annotation(rayv1.AnnotationRayDashboardURL, dashURL).Obj()
	rc.UID = ""
	NewWithT(t).Expect(k8s.Create(context.Background(), rc)).To(Succeed())
	job := create(t, makeJob("selector", ns, "true").Mode(rayv1.HTTPMode).ClusterSelector("shared").ShutdownAfterJobFinishes(0).Obj())
	g := NewWithT(t)
	g.Expect(readyCluster(t, job)).To(Equal("shared"))
	done := waitFor(t, job, rayv1.JobDeploymentStatusComplete)
	g.Expect(done.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
	g.Consistently(func(g Gomega) { g.Expect(clusterExists(g, ns, "shared")).To(BeTrue()) }, 4*time.Second).Should(Succeed())
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "selector-head-svc"}, &corev1.Service{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a clusterSelector RayJob makes no head Service: %v", err)
}

func TestInteractiveModeWaitsForTheUsersJobID(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("interactive", ns, "").Mode(rayv1.InteractiveMode).Obj())
	readyCluster(t, job)
	waiting := waitFor(t, job, rayv1.JobDeploymentStatusWaiting)
	g := NewWithT(t)
	g.Expect(waiting.Status.JobId).To(BeEmpty())
	id, err := dash.SubmitJob(context.Background(), dashboard.JobRequest{Entrypoint: "true", SubmissionID: "users-own-id"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		cur := get(g, job)
		cur.Spec.JobId = id
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	done := waitFor(t, job, rayv1.JobDeploymentStatusComplete)
	g.Expect(done.Status.JobId).To(Equal("users-own-id"))
}

func eventNotes(g Gomega, job *rayv1.RayJob) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(job.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Regarding.Kind+"/"+e.Regarding.Name+" "+e.Reason+": "+e.Note)
	}
	return out
}

// SidecarMode: the submitter is a container of the head Pod; the RayJob
// ends when the Ray job has ended and that container has exited.
func TestSidecarModeEndsWhenTheSubmitterContainerExits(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("sidecar", ns, "true").Mode(rayv1.SidecarMode).Obj())
	cluster := readyCluster(t, job)
	running := waitFor(t, job, rayv1.JobDeploymentStatusRunning)
	g := NewWithT(t)
	var head corev1.Pod
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns),
			client.MatchingLabels{rayv1.RayClusterLabelKey: cluster, rayv1.RayNodeTypeLabelKey: "head"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		head = pods.Items[0]
	}, timeout).Should(Succeed())
	names := []string{}
	for _, c := range head.Spec.Containers {
		names = append(names, c.Name)
	}
	g.Expect(names).To(ContainElement(rayv1.SubmitterContainerName))
	g.Expect(head.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))

	_, err := dash.SubmitJob(context.Background(), dashboard.JobRequest{Entrypoint: "true", SubmissionID: running.Status.JobId})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) { g.Expect(get(g, job).Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded)) }, timeout).Should(Succeed())
	g.Expect(get(g, job).Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusRunning), "the submitter container still runs")
	g.Eventually(func(g Gomega) {
		p := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(&head), p)).To(Succeed())
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: rayv1.SubmitterContainerName, Image: "x",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.Now()}}}}
		g.Expect(k8s.Status().Update(context.Background(), p)).To(Succeed())
	}, timeout).Should(Succeed())
	waitFor(t, job, rayv1.JobDeploymentStatusComplete)
}

// An invalid RayJob (suspend without shutdownAfterJobFinishes, which Kueue
// needs to free its quota) is ValidationFailed, with KubeRay's Warning,
// and nothing is created for it.
func TestInvalidRayJobIsValidationFailedAndCreatesNothing(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("invalid", ns, "true").Suspend(true).Obj())
	failed := waitFor(t, job, rayv1.JobDeploymentStatusValidationFailed)
	g := NewWithT(t)
	g.Expect(failed.Status.Reason).To(Equal(rayv1.ValidationFailed))
	g.Expect(failed.Status.Message).To(ContainSubstring("shutdownAfterJobFinishes"))
	g.Eventually(func(g Gomega) { g.Expect(eventActions(g, job)).To(ContainElement("InvalidRayJobSpec Validate")) }, timeout).Should(Succeed())
	var clusters rayv1.RayClusterList
	g.Expect(k8s.List(context.Background(), &clusters, client.InNamespace(ns))).To(Succeed())
	g.Expect(clusters.Items).To(BeEmpty())
	g.Expect(failed.Finalizers).To(BeEmpty())
}

// setHeadContainers gives the RayJob's head Pod these container states, as
// a kubelet would, and leaves the Pod not Ready: a submitter container
// that has ended is never ready again.
func setHeadContainers(t *testing.T, job *rayv1.RayJob, ray, sub corev1.ContainerState) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		name := get(g, job).Status.RayClusterName
		g.Expect(name).NotTo(BeEmpty())
		var pods corev1.PodList
		g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(job.Namespace),
			client.MatchingLabels{rayv1.RayClusterLabelKey: name, rayv1.RayNodeTypeLabelKey: "head"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		p := &pods.Items[0]
		g.Expect(p.Spec.Containers[len(p.Spec.Containers)-1].Name).To(Equal(rayv1.SubmitterContainerName))
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "10.0.1.2"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: metav1.Now()}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: p.Spec.Containers[0].Name, Image: "x", State: ray, Ready: ray.Running != nil, Started: ptr.To(ray.Running != nil)},
			{Name: rayv1.SubmitterContainerName, Image: "x", State: sub},
		}
		g.Expect(k8s.Status().Update(context.Background(), p)).To(Succeed())
	}, timeout).Should(Succeed())
}

// SidecarMode, a deliberate difference from KubeRay v1.7.0: a submitter
// container that ended before the head Pod was Ready keeps the cluster
// from ever being ready; once it has ended and the head's Ray container
// runs, the RayJob stops waiting for a ready cluster and follows the Ray
// job to the end.
func TestSidecarModeSubmitterEndedBeforeTheHeadWasReadyCompletes(t *testing.T) {
	ns := newNamespace(t)
	job := create(t, makeJob("sidecar-short", ns, "echo hi").Mode(rayv1.SidecarMode).Obj())
	g := NewWithT(t)
	var id string
	g.Eventually(func(g Gomega) {
		id = get(g, job).Status.JobId
		g.Expect(id).NotTo(BeEmpty())
	}, timeout).Should(Succeed())
	// What the sidecar's `ray job submit` did before it exited.
	_, err := dash.SubmitJob(context.Background(), dashboard.JobRequest{Entrypoint: "echo hi", SubmissionID: id})
	g.Expect(err).NotTo(HaveOccurred())
	exited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}

	// The Ray container does not run yet: the dashboard is not up, wait.
	setHeadContainers(t, job, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}, exited)
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, job).Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusInitializing))
	}, 4*time.Second).Should(Succeed())

	setHeadContainers(t, job, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, exited)
	done := waitFor(t, job, rayv1.JobDeploymentStatusComplete)
	g.Expect(done.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
	g.Expect(done.Status.DashboardURL).To(Equal(done.Status.RayClusterName + "-head-svc." + ns + ".svc.cluster.local:8265"))
	g.Expect(done.Status.StartTime).NotTo(BeNil())
	g.Expect(done.Status.RayJobStatusInfo.StartTime).NotTo(BeNil())
	g.Expect(done.Status.RayClusterStatus.State).NotTo(Equal(rayv1.Ready), "the head Pod never was Ready")
}
