package raycluster_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

var (
	k8s client.Client
	// writes counts the manager's mutating API requests.
	writes = &testenv.WriteCounter{}
)

// TestMain runs one API server and one Gantry manager (the real manager
// wiring: label-filtered caches, the raycluster integration) for all tests.
// There is no kubelet: tests move Pods to Running/Ready themselves.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// make fuzz runs one fuzz target and no test: no API server.
		os.Exit(m.Run())
	}
	// Before the API server starts: controller-runtime discards every log
	// line for good when none is set within its first 30 s of logging.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	env, err := testenv.StartE(testenv.Options{AddToScheme: raycluster.Integration().AddToScheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reg := &workload.Registry{}
	reg.MustRegister(raycluster.Integration())
	opts, err := app.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0"}, reg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, writes.Wrap(env.Config), opts, reg) }()
	k8s = env.Client
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	_ = env.Stop()
	os.Exit(code)
}

const timeout = 30 * time.Second

func newNamespace(t *testing.T) string {
	t.Helper()
	if k8s == nil {
		t.Skip("no API server: it is not started when fuzzing (-test.fuzz)")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rc-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func create(t *testing.T, rc *rayv1.RayCluster) *rayv1.RayCluster {
	t.Helper()
	rc.UID = ""
	if err := k8s.Create(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	return rc
}

func pods(g Gomega, rc *rayv1.RayCluster, extra map[string]string) []corev1.Pod {
	sel := client.MatchingLabels{rayv1.RayClusterLabelKey: rc.Name}
	for k, v := range extra {
		sel[k] = v
	}
	var list corev1.PodList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(rc.Namespace), sel)).To(Succeed())
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	return live
}

var (
	headSel   = map[string]string{rayv1.RayNodeTypeLabelKey: "head"}
	workerSel = map[string]string{rayv1.RayNodeTypeLabelKey: "worker"}
)

func groupSel(g string) map[string]string {
	return map[string]string{rayv1.RayNodeTypeLabelKey: "worker", rayv1.RayNodeGroupLabelKey: g}
}

// markReady plays kubelet: every Pod of the cluster becomes Running and Ready.
func markReady(g Gomega, rc *rayv1.RayCluster) {
	for i, p := range pods(g, rc, nil) {
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = fmt.Sprintf("10.0.0.%d", i+2)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Ready: true, Image: c.Image, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			})
		}
		g.Expect(k8s.Status().Update(context.Background(), &p)).To(Succeed())
	}
}

func get(g Gomega, rc *rayv1.RayCluster) *rayv1.RayCluster {
	out := &rayv1.RayCluster{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(rc), out)).To(Succeed())
	return out
}

func update(t *testing.T, rc *rayv1.RayCluster, mutate func(*rayv1.RayCluster)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := get(g, rc)
		mutate(cur)
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
}

func eventMessages(g Gomega, rc *rayv1.RayCluster, reason string) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(rc.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == rc.Name && (reason == "" || e.Reason == reason) {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

func condTrue(rc *rayv1.RayCluster, t rayv1.RayClusterConditionType) bool {
	return meta.IsStatusConditionTrue(rc.Status.Conditions, string(t))
}

func TestClusterGetsServicesHeadWorkersAndReadyStatus(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("demo", ns).WorkerGroup("cpu", 3).Obj())

	g.Eventually(func(g Gomega) {
		svc := &corev1.Service{}
		g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "demo-head-svc"}, svc)).To(Succeed())
		g.Expect(svc.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"))
		g.Expect(pods(g, rc, headSel)).To(HaveLen(1))
		g.Expect(pods(g, rc, groupSel("cpu"))).To(HaveLen(3))
	}, timeout).Should(Succeed())
	head := pods(g, rc, headSel)[0]
	g.Expect(head.Name).To(HavePrefix("demo-head-"))
	g.Expect(head.Labels).To(And(HaveKeyWithValue("ray.io/is-ray-node", "yes"), HaveKeyWithValue("ray.io/group", "headgroup")))
	g.Expect(head.OwnerReferences).To(ContainElement(HaveField("Name", "demo")))
	for _, w := range pods(g, rc, workerSel) {
		g.Expect(w.Name).To(HavePrefix("demo-cpu-worker-"))
	}

	// Before the Pods run, status reports what is desired and nothing ready.
	g.Eventually(func(g Gomega) {
		cur := get(g, rc)
		g.Expect(cur.Status.DesiredWorkerReplicas).To(Equal(int32(3)))
		g.Expect(condTrue(cur, rayv1.RayClusterProvisioned)).To(BeFalse())
	}, timeout).Should(Succeed())

	g.Eventually(func(g Gomega) { markReady(g, rc) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, rc)
		g.Expect(cur.Status.State).To(Equal(rayv1.Ready))
		g.Expect(cur.Status.ReadyWorkerReplicas).To(Equal(int32(3)))
		g.Expect(cur.Status.AvailableWorkerReplicas).To(Equal(int32(3)))
		g.Expect(condTrue(cur, rayv1.HeadPodReady)).To(BeTrue())
		g.Expect(condTrue(cur, rayv1.RayClusterProvisioned)).To(BeTrue())
		g.Expect(cur.Status.Head.ServiceName).To(Equal("demo-head-svc"))
		g.Expect(cur.Status.Head.PodName).To(Equal(head.Name))
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	}, timeout).Should(Succeed())

	// KubeRay's reasons, one event per reason rather than per Pod, naming
	// the Pods.
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.CreatedHeadPod)) }, timeout).
		Should(ConsistOf(ContainSubstring(head.Name)))
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.CreatedWorkerPod)) }, timeout).
		Should(ConsistOf(ContainSubstring("Created 3 worker Pods in group cpu")))
	created := eventMessages(g, rc, string(rayv1.CreatedWorkerPod))[0]
	for _, w := range pods(g, rc, workerSel) {
		g.Expect(created).To(ContainSubstring(w.Name))
	}
	// With KubeRay's action for each reason.
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(rc.Namespace))).To(Succeed())
	var actions []string
	for _, e := range list.Items {
		if e.Regarding.Name == rc.Name {
			actions = append(actions, e.Reason+" "+e.Action)
		}
	}
	g.Expect(actions).To(ContainElements("CreatedHeadPod Create", "CreatedWorkerPod Create", "CreatedService Create"))
}

func TestHeadPodIsRecreatedAfterDeletion(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("headless", ns).Obj())
	var first corev1.Pod
	g.Eventually(func(g Gomega) {
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		first = heads[0]
	}, timeout).Should(Succeed())
	g.Expect(k8s.Delete(context.Background(), &first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		g.Expect(heads[0].UID).NotTo(Equal(first.UID))
	}, timeout).Should(Succeed())
}

func TestFailedHeadPodIsReplaced(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("failing", ns).Obj())
	var first corev1.Pod
	g.Eventually(func(g Gomega) {
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		first = heads[0]
	}, timeout).Should(Succeed())
	first.Status.Phase = corev1.PodFailed
	g.Expect(k8s.Status().Update(context.Background(), &first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		g.Expect(heads[0].UID).NotTo(Equal(first.UID))
	}, timeout).Should(Succeed())
}

func TestWorkerScaleUpDownAndWorkersToDelete(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("scale", ns).WorkerGroup("cpu", 2).Obj())
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, groupSel("cpu"))).To(HaveLen(2)) }, timeout).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](5) })
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, groupSel("cpu"))).To(HaveLen(5)) }, timeout).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, groupSel("cpu"))).To(HaveLen(3)) }, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(pods(g, rc, groupSel("cpu"))).To(HaveLen(3)) }, 2*time.Second).Should(Succeed())

	// The autoscaler's pick is deleted, whatever Pod the operator would choose.
	victim := pods(g, rc, groupSel("cpu"))[1].Name
	update(t, rc, func(c *rayv1.RayCluster) {
		c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
		c.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{victim}
	})
	g.Eventually(func(g Gomega) {
		left := pods(g, rc, groupSel("cpu"))
		g.Expect(left).To(HaveLen(2))
		g.Expect(left).NotTo(ContainElement(HaveField("ObjectMeta.Name", victim)))
	}, timeout).Should(Succeed())
	// As KubeRay v1.7.0 (ray-project/kuberay#733), the operator never
	// writes the spec: the autoscaler, or the user, clears the list.
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, rc).Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete).To(Equal([]string{victim}))
	}, time.Second).Should(Succeed())
}

func TestSuspendDeletesPodsThenResumeRecreates(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("sleepy", ns).WorkerGroup("cpu", 2).Obj())
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, nil)).To(HaveLen(3)) }, timeout).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.Suspend = ptr.To(true) })
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(BeEmpty())
		cur := get(g, rc)
		g.Expect(condTrue(cur, rayv1.RayClusterSuspended)).To(BeTrue())
		g.Expect(condTrue(cur, rayv1.RayClusterSuspending)).To(BeFalse())
		g.Expect(cur.Status.State).To(Equal(rayv1.Suspended))
	}, timeout).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.Suspend = ptr.To(false) })
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(HaveLen(3))
		g.Expect(condTrue(get(g, rc), rayv1.RayClusterSuspended)).To(BeFalse())
	}, timeout).Should(Succeed())
}

func TestRecreateUpgradeOnTemplateChangeOnly(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("upgrade", ns).WorkerGroup("cpu", 1).
		UpgradeStrategy(rayv1.RayClusterRecreate).Obj())
	var head corev1.Pod
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, workerSel)).To(HaveLen(1))
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		head = heads[0]
	}, timeout).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2) })
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, workerSel)).To(HaveLen(2)) }, timeout).Should(Succeed())
	g.Expect(pods(g, rc, headSel)[0].UID).To(Equal(head.UID), "a replica change must not recreate the cluster")

	update(t, rc, func(c *rayv1.RayCluster) {
		c.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.47.0"
	})
	g.Eventually(func(g Gomega) {
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		g.Expect(heads[0].UID).NotTo(Equal(head.UID))
		workers := pods(g, rc, workerSel)
		g.Expect(workers).To(HaveLen(2))
		for _, w := range workers {
			g.Expect(w.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.47.0"))
		}
	}, timeout).Should(Succeed())
}

func TestMultiHostGroupsAreManagedAtomically(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("tpu", ns).MultiHostWorkerGroup("slice", 2, 4).Obj())
	replicas := func(g Gomega) map[string][]corev1.Pod {
		out := map[string][]corev1.Pod{}
		for _, p := range pods(g, rc, groupSel("slice")) {
			out[p.Labels[rayv1.RayWorkerReplicaNameKey]] = append(out[p.Labels[rayv1.RayWorkerReplicaNameKey]], p)
		}
		return out
	}
	var before map[string][]corev1.Pod
	g.Eventually(func(g Gomega) {
		before = replicas(g)
		g.Expect(before).To(HaveLen(2))
		for name, ps := range before {
			g.Expect(name).NotTo(BeEmpty())
			g.Expect(ps).To(HaveLen(4))
			hosts := map[string]bool{}
			for _, p := range ps {
				hosts[p.Labels[rayv1.RayHostIndexKey]] = true
			}
			g.Expect(hosts).To(HaveLen(4))
		}
	}, timeout).Should(Succeed())

	// Losing one host fails the whole replica: its other hosts go and a
	// complete replica replaces it.
	var broken string
	for name, ps := range before {
		broken = name
		g.Expect(k8s.Delete(context.Background(), &ps[0])).To(Succeed())
		break
	}
	g.Eventually(func(g Gomega) {
		now := replicas(g)
		g.Expect(now).To(HaveLen(2))
		g.Expect(now).NotTo(HaveKey(broken))
		for _, ps := range now {
			g.Expect(ps).To(HaveLen(4))
		}
	}, timeout).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1) })
	g.Eventually(func(g Gomega) {
		now := replicas(g)
		g.Expect(now).To(HaveLen(1))
		for _, ps := range now {
			g.Expect(ps).To(HaveLen(4))
		}
	}, timeout).Should(Succeed())
}

func TestGCSFaultToleranceFinalizerRunsCleanupJob(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("ft", ns).WorkerGroup("cpu", 1).GCSFaultTolerance("redis:6379").Obj())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, rc).Finalizers).To(ContainElement(rayv1.GCSFaultToleranceRedisCleanupFinalizer))
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
	}, timeout).Should(Succeed())

	g.Expect(k8s.Delete(context.Background(), get(g, rc))).To(Succeed())
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(BeEmpty())
		g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "ft-redis-cleanup"}, job)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Expect(job.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"))
	g.Consistently(func(g Gomega) { g.Expect(get(g, rc).Finalizers).NotTo(BeEmpty()) }, 2*time.Second).Should(Succeed())

	// Play the Job controller: the cleanup finished.
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.CompletionTime = &now
	job.Status.Succeeded = 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	g.Expect(k8s.Status().Update(context.Background(), job)).To(Succeed())
	g.Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(rc), &rayv1.RayCluster{})
		return apierrors.IsNotFound(err)
	}, timeout).Should(BeTrue(), "the finalizer is removed once the cleanup Job finished")
}

// A namespace being deleted accepts no new objects, the cleanup Job
// included: a GCS fault-tolerant cluster in it must still go (KubeRay's
// clusters stay Terminating, and with them the namespace).
func TestGCSFaultToleranceFinalizerInTerminatingNamespace(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("ft", ns).WorkerGroup("cpu", 1).GCSFaultTolerance("redis:6379").Obj())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, rc).Finalizers).To(ContainElement(rayv1.GCSFaultToleranceRedisCleanupFinalizer))
	}, timeout).Should(Succeed())

	// There is no namespace controller here: the namespace stays
	// Terminating, and the RayCluster is deleted as that controller would.
	g.Expect(k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(k8s.Delete(context.Background(), get(g, rc))).To(Succeed())
	g.Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(rc), &rayv1.RayCluster{})
		return apierrors.IsNotFound(err)
	}, timeout).Should(BeTrue(), "the RayCluster must not hold its namespace's deletion")
	err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "ft-redis-cleanup"}, &batchv1.Job{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no cleanup Job can exist in a terminating namespace (err=%v)", err)
}

// A cleanup Job that never runs (here: no Job controller at all) holds the
// deleted cluster only for KubeRay's ray.io/gcs-ft-deletion-timeout, with
// the ForceDeletedStuckCluster Warning; the requeue at the deadline is what
// wakes the controller, as nothing else changes.
func TestGCSFaultToleranceFinalizerTimesOut(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("ft", ns).WorkerGroup("cpu", 1).GCSFaultTolerance("redis:6379").
		Annotation(raycluster.GCSFTDeletionTimeoutAnnotation, "3").Obj())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, rc).Finalizers).To(ContainElement(rayv1.GCSFaultToleranceRedisCleanupFinalizer))
	}, timeout).Should(Succeed())

	g.Expect(k8s.Delete(context.Background(), get(g, rc))).To(Succeed())
	g.Eventually(func() error {
		return k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "ft-redis-cleanup"}, &batchv1.Job{})
	}, timeout).Should(Succeed(), "the cleanup Job is created")
	g.Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(rc), &rayv1.RayCluster{})
		return apierrors.IsNotFound(err)
	}, timeout).Should(BeTrue(), "the finalizer is removed after the timeout")
	g.Eventually(func(g Gomega) {
		g.Expect(eventMessages(g, rc, raycluster.ReasonForceDeletedStuckCluster)).To(ConsistOf(ContainSubstring("did not finish")))
	}, timeout).Should(Succeed())
}

func TestExternallyManagedClusterIsLeftAlone(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := raytesting.MakeRayCluster("kueued", ns).WorkerGroup("cpu", 1).Obj()
	rc.Spec.ManagedBy = ptr.To(rayv1.MultiKueueController)
	create(t, rc)
	g.Consistently(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(BeEmpty())
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "kueued-head-svc"}, &corev1.Service{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		g.Expect(get(g, rc).Status.State).To(BeEmpty())
	}, 3*time.Second).Should(Succeed())
}

func TestInvalidSpecGetsWarningAndNoPods(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := raytesting.MakeRayCluster("conflict", ns).WorkerGroup("cpu", 1).Obj()
	// CPUs in both rayStartParams and resources: KubeRay rejects it.
	rc.Spec.HeadGroupSpec.RayStartParams["num-cpus"] = "2"
	rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "2"}
	create(t, rc)
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.InvalidRayClusterSpec)) }, timeout).
		ShouldNot(BeEmpty())
	msgs := eventMessages(g, rc, string(rayv1.InvalidRayClusterSpec))
	g.Expect(strings.Join(msgs, "\n")).To(ContainSubstring("should not be set in both rayStartParams and Resources"))
	// As KubeRay v1.7.0: the Warning only; no Pods and no status write.
	g.Consistently(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(BeEmpty())
		g.Expect(get(g, rc).Status.State).To(BeEmpty())
	}, 2*time.Second).Should(Succeed())

	// Fixed, the cluster is built and becomes ready.
	update(t, rc, func(c *rayv1.RayCluster) { delete(c.Spec.HeadGroupSpec.RayStartParams, "num-cpus") })
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
		markReady(g, rc)
		st := get(g, rc).Status
		g.Expect(st.State).To(Equal(rayv1.Ready))
		g.Expect(st.Reason).To(BeEmpty())
	}, timeout).Should(Succeed())
}

// A running cluster whose spec becomes invalid (the webhook off, or
// admitted before) keeps its Pods and its status: its state does not turn
// failed while Ray runs on (KubeRay only records the Warning).
func TestInvalidSpecOnARunningClusterLeavesItsStatusAndPods(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("running", ns).WorkerGroup("cpu", 1).Obj())
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
		markReady(g, rc)
		g.Expect(get(g, rc).Status.State).To(Equal(rayv1.Ready))
	}, timeout).Should(Succeed())
	update(t, rc, func(c *rayv1.RayCluster) {
		if c.Spec.HeadGroupSpec.RayStartParams == nil {
			c.Spec.HeadGroupSpec.RayStartParams = map[string]string{}
		}
		c.Spec.HeadGroupSpec.RayStartParams["num-cpus"] = "2"
		c.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "2"}
	})
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.InvalidRayClusterSpec)) }, timeout).
		ShouldNot(BeEmpty())
	g.Consistently(func(g Gomega) {
		st := get(g, rc).Status
		g.Expect(st.State).To(Equal(rayv1.Ready))
		g.Expect(st.Reason).To(BeEmpty())
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
	}, 3*time.Second).Should(Succeed())
}

func TestIngressAndAuthSecret(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := raytesting.MakeRayCluster("secure", ns).RayVersion("2.52.0").Annotation(raycluster.IngressClassAnnotationKey, "nginx").Obj()
	rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
	rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	create(t, rc)

	ing := &networkingv1.Ingress{}
	secret := &corev1.Secret{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "secure-head-ingress"}, ing)).To(Succeed())
		g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "secure"}, secret)).To(Succeed())
		g.Expect(pods(g, rc, headSel)).To(HaveLen(1))
	}, timeout).Should(Succeed())
	g.Expect(ing.Spec.IngressClassName).To(HaveValue(Equal("nginx")))
	g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name).To(Equal("secure-head-svc"))
	token := string(secret.Data["auth_token"])
	g.Expect(token).To(HaveLen(64))
	g.Expect(secret.OwnerReferences).To(ContainElement(HaveField("Name", "secure")))

	// The head Pod reads the token from the Secret.
	head := pods(g, rc, headSel)[0]
	g.Expect(head.Spec.Containers[0].Env).To(ContainElement(And(
		HaveField("Name", "RAY_AUTH_TOKEN"),
		HaveField("ValueFrom.SecretKeyRef.Name", "secure"))))

	// Later reconciles never rotate the token.
	update(t, rc, func(c *rayv1.RayCluster) { c.Labels = map[string]string{"touch": "1"} })
	g.Consistently(func(g Gomega) {
		cur := &corev1.Secret{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(secret), cur)).To(Succeed())
		g.Expect(string(cur.Data["auth_token"])).To(Equal(token))
	}, 2*time.Second).Should(Succeed())
}

// reconciles is how many RayCluster reconciles the manager has finished.
func reconciles(g Gomega) float64 {
	n, err := testenv.Reconciles(raycluster.Name)
	g.Expect(err).NotTo(HaveOccurred())
	return n
}

// TestConvergedClusterSendsNoWrites: once a cluster is ready, a reconcile
// (triggered here by a label change) sends nothing — no Service apply, no
// status write, no event.
func TestConvergedClusterSendsNoWrites(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("quiet", ns).WorkerGroup("cpu", 2).Obj())
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, nil)).To(HaveLen(3)) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) { markReady(g, rc) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(get(g, rc).Status.State).To(Equal(rayv1.Ready)) }, timeout).Should(Succeed())

	// Wait until the manager is idle, then poke the cluster.
	g.Expect(writes.WaitQuiet(time.Second, timeout)).To(BeTrue(), "the manager kept writing: %v", writes.ByVerb())
	before, reconciled := writes.Total(), reconciles(g)
	update(t, rc, func(c *rayv1.RayCluster) { c.Labels = map[string]string{"poke": "1"} })
	g.Eventually(func(g Gomega) { g.Expect(reconciles(g)).To(BeNumerically(">", reconciled)) }, timeout).Should(Succeed())
	g.Consistently(func() int64 { return writes.Total() - before }, 2*time.Second).Should(BeZero(),
		"writes by verb: %v", writes.ByVerb())
}

// TestAutoscalerServiceAccountNotFound follows KubeRay v1.6.2's
// reconcileAutoscalerServiceAccount: a head template naming a
// ServiceAccount that does not exist gets a Warning event
// AutoscalerServiceAccountNotFound and the reconcile stops before the Pods
// (the account is not created for the user); once the user creates it the
// head Pod follows.
func TestAutoscalerServiceAccountNotFound(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("nosa", ns).Autoscaling().HeadServiceAccount("my-autoscaler-sa").WorkerGroup("cpu", 1).Obj())

	want := "AutoscalerServiceAccountNotFound: Failed to reconcile RayCluster " + ns + "/nosa. " +
		"If users specify ServiceAccountName for the head Pod, they need to create a ServiceAccount themselves. " +
		"However, ServiceAccount my-autoscaler-sa is not found. Please create one. " +
		"See the PR description of https://github.com/ray-project/kuberay/pull/1128 for more details."
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, "AutoscalerServiceAccountNotFound") }, timeout).
		Should(ContainElement(want))
	g.Consistently(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(BeEmpty())
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "my-autoscaler-sa"}, &corev1.ServiceAccount{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the operator must not create the user's ServiceAccount")
	}, 2*time.Second).Should(Succeed())

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-autoscaler-sa"}}
	g.Expect(k8s.Create(context.Background(), sa)).To(Succeed())
	g.Eventually(func(g Gomega) {
		head := pods(g, rc, headSel)
		g.Expect(head).To(HaveLen(1))
		g.Expect(head[0].Spec.ServiceAccountName).To(Equal("my-autoscaler-sa"))
	}, timeout).Should(Succeed())
}

// TestIngressPathAndClassFollowKubeRay: the live Ingress has KubeRay's
// path and no kubernetes.io/ingress.class annotation next to its class.
func TestIngressPathAndClassFollowKubeRay(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := raytesting.MakeRayCluster("dash", ns).
		Annotation(raycluster.IngressClassAnnotationKey, "nginx").
		Annotation("nginx.ingress.kubernetes.io/rewrite-target", "/$1").
		Obj()
	rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
	create(t, rc)

	ing := &networkingv1.Ingress{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "dash-head-ingress"}, ing)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Expect(ing.Spec.IngressClassName).To(HaveValue(Equal("nginx")))
	g.Expect(ing.Annotations).NotTo(HaveKey(raycluster.IngressClassAnnotationKey))
	g.Expect(ing.Annotations).To(HaveKeyWithValue("nginx.ingress.kubernetes.io/rewrite-target", "/$1"))
	// KubeRay v1.7.0's default: every path of every host.
	g.Expect(ing.Spec.Rules[0].Host).To(BeEmpty())
	g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].Path).To(Equal("/"))
	g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].PathType).To(HaveValue(Equal(networkingv1.PathTypePrefix)))
}

// TestEmptyAuthOptionsLeavePodsUnauthenticated: authOptions {} does not
// turn Ray auth on (KubeRay v1.6.2 utils.IsAuthEnabled needs mode token),
// even on a Ray version without token auth.
func TestEmptyAuthOptionsLeavePodsUnauthenticated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("noauth", ns).RayVersion("2.46.0").Auth(&rayv1.AuthOptions{}).Obj())
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, headSel)).To(HaveLen(1)) }, timeout).Should(Succeed())
	head := pods(g, rc, headSel)[0]
	g.Expect(head.Spec.Containers[0].Env).NotTo(ContainElement(HaveField("Name", "RAY_AUTH_MODE")))
	g.Expect(head.Spec.Containers[0].Env).NotTo(ContainElement(HaveField("Name", "RAY_AUTH_TOKEN")))
	g.Expect(eventMessages(g, rc, string(rayv1.InvalidRayClusterSpec))).To(BeEmpty())
	// KubeRay's reconcileAuthSecret skips only nil authOptions and mode
	// disabled, so the token Secret is generated all the same.
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "noauth"}, &corev1.Secret{})).To(Succeed())
	}, timeout).Should(Succeed())
}

// TestUsersRBACUnderTheClusterNameIsNeverTakenOver: a ServiceAccount, Role
// and RoleBinding the user made under the cluster's name (the autoscaler's
// names; the account with a cloud identity annotation) are used as they
// are, as KubeRay does: no owner reference (which would garbage-collect
// them with the cluster), no labels, no field of Gantry's.
func TestUsersRBACUnderTheClusterNameIsNeverTakenOver(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	const name = "irsa"
	annotations := map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/ray"}
	users := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}},
	}
	for _, o := range users {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}
	rc := create(t, raytesting.MakeRayCluster(name, ns).Autoscaling().WorkerGroup("cpu", 1).Obj())
	g.Eventually(func(g Gomega) {
		head := pods(g, rc, headSel)
		g.Expect(head).To(HaveLen(1))
		g.Expect(head[0].Spec.ServiceAccountName).To(Equal(name))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, o := range users {
			live := o.DeepCopyObject().(client.Object)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), live)).To(Succeed())
			g.Expect(live.GetOwnerReferences()).To(BeEmpty(), "%T %s is the user's", o, name)
			g.Expect(live.GetLabels()).To(BeEmpty(), "%T %s is the user's", o, name)
			for _, m := range live.GetManagedFields() {
				g.Expect(m.Manager).NotTo(Equal(raycluster.FieldOwner), "%T %s is the user's", o, name)
			}
		}
		sa := &corev1.ServiceAccount{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sa)).To(Succeed())
		g.Expect(sa.Annotations).To(Equal(annotations))
	}, 2*time.Second).Should(Succeed())
}
