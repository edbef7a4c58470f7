//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// Kueue's objects are built unstructured: the suite takes no dependency on
// Kueue's Go module for five small manifests. Labels and fields are Kueue
// v1beta2's (sigs.k8s.io/kueue apis/kueue/v1beta2, pinned in
// test/tools/kueue/go.mod).
const (
	kueueGroupVersion = "kueue.x-k8s.io/v1beta2"
	// kueueQueueLabel puts a job in a LocalQueue.
	kueueQueueLabel = "kueue.x-k8s.io/queue-name"
	// kueuePriorityLabel names a WorkloadPriorityClass.
	kueuePriorityLabel = "kueue.x-k8s.io/priority-class"
)

// requireKueue skips, saying why, unless hack/e2e-local.sh started Kueue
// (it exports GANTRY_KUEUE=true; CI runs that way).
func requireKueue() {
	GinkgoHelper()
	if os.Getenv("GANTRY_KUEUE") != "true" {
		Skip("Kueue is not running: hack/e2e-local.sh (make test-e2e) starts it and sets GANTRY_KUEUE=true")
	}
}

func kueueObject(kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(kueueGroupVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// createKueueObject creates obj and deletes it when the spec ends
// (cluster-scoped ones outlive the namespace otherwise).
func createKueueObject(ctx context.Context, obj *unstructured.Unstructured) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, obj)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
	})
}

// clusterQueue creates a ResourceFlavor, a ClusterQueue with cpu and
// memory quotas of that flavor, and a LocalQueue in ns pointing at it, all
// named after ns; preemption within the queue is by priority. It returns
// the LocalQueue's name.
func clusterQueue(ctx context.Context, ns, cpu string) string {
	GinkgoHelper()
	createKueueObject(ctx, kueueObject("ResourceFlavor", "", ns, map[string]any{}))
	createKueueObject(ctx, kueueObject("ClusterQueue", "", ns, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: ns}},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory"},
			"flavors": []any{map[string]any{
				"name": ns,
				"resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": cpu},
					map[string]any{"name": "memory", "nominalQuota": "100Gi"},
				},
			}},
		}},
		"preemption": map[string]any{"withinClusterQueue": "LowerPriority"},
	}))
	createKueueObject(ctx, kueueObject("LocalQueue", ns, "queue", map[string]any{"clusterQueue": ns}))
	return "queue"
}

// queuedRayCluster is the minimal sample (head 1 CPU, one worker of 1 CPU)
// named name, in queue.
func queuedRayCluster(ns, name, queue string) *rayv1.RayCluster {
	rc := loadSample[rayv1.RayCluster](rayMinimalSample)
	rc.Namespace, rc.Name = ns, name
	rc.Labels = map[string]string{kueueQueueLabel: queue}
	return rc
}

// queuedTrainJob is a TrainJob on rt with one node of 1 CPU, in queue.
func queuedTrainJob(rt *trainerv1alpha1.TrainingRuntime, name, queue string) *trainerv1alpha1.TrainJob {
	tj := trainJobOn(rt, name)
	tj.Labels = map[string]string{kueueQueueLabel: queue}
	tj.Spec.Trainer = &trainerv1alpha1.Trainer{
		NumNodes: ptr.To[int32](1),
		ResourcesPerNode: &corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}},
	}
	return tj
}

// createQueuedTrainJob creates tj, retrying while Kueue's TrainJob webhook
// answers that its runtime is not found: Kueue reads runtimes from its own
// cache, which sees a just-created TrainingRuntime a moment later. A
// GitOps tool retries the same way.
func createQueuedTrainJob(ctx context.Context, tj *trainerv1alpha1.TrainJob) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		err := k8s.Create(ctx, tj.DeepCopy())
		g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "creating TrainJob %s: %v", tj.Name, err)
	}).Should(Succeed())
}

func suspended(ctx context.Context, g Gomega, obj client.Object) bool {
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		return ptr.Deref(o.Spec.Suspend, false)
	case *trainerv1alpha1.TrainJob:
		return ptr.Deref(o.Spec.Suspend, false)
	case *rayv1.RayJob:
		return o.Spec.Suspend
	}
	panic(fmt.Sprintf("suspended: %T", obj))
}

// podsOf lists the pods Gantry made for a RayCluster, or the pods of a
// TrainJob's JobSet.
func podsOf(ctx context.Context, g Gomega, obj client.Object) []corev1.Pod {
	switch obj.(type) {
	case *rayv1.RayCluster:
		return listPods(g, ctx, obj.GetNamespace(), clusterPodLabels(obj.GetName()))
	case *trainerv1alpha1.TrainJob:
		return listPods(g, ctx, obj.GetNamespace(), map[string]string{jobsetv1alpha2.JobSetNameKey: obj.GetName()})
	case *rayv1.RayJob:
		// The pods of the cluster it made (suspended() has just read it).
		cluster := obj.(*rayv1.RayJob).Status.RayClusterName
		if cluster == "" {
			return nil
		}
		return listPods(g, ctx, obj.GetNamespace(), clusterPodLabels(cluster))
	}
	panic(fmt.Sprintf("podsOf: %T", obj))
}

// expectAdmittedAlone waits until exactly one of objs runs (unsuspended,
// with pods) and every other one stays suspended with no pod, and returns
// the running one.
func expectAdmittedAlone(ctx context.Context, objs ...client.Object) client.Object {
	GinkgoHelper()
	var running client.Object
	Eventually(ctx, func(g Gomega) {
		running = nil
		for _, o := range objs {
			if suspended(ctx, g, o) {
				g.Expect(podsOf(ctx, g, o)).To(BeEmpty(), "%s %s is suspended but has pods", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
				continue
			}
			g.Expect(running).To(BeNil(), "both %s and %s were admitted", o.GetName(), nameOf(running))
			g.Expect(podsOf(ctx, g, o)).NotTo(BeEmpty(), "%s is admitted but has no pod yet", o.GetName())
			running = o
		}
		g.Expect(running).NotTo(BeNil(), "none admitted")
	}).Should(Succeed())
	// Admitted alone, and it stays so: the other one is not let in beside it.
	Consistently(ctx, func(g Gomega) {
		for _, o := range objs {
			if o != running {
				g.Expect(suspended(ctx, g, o)).To(BeTrue(), "%s admitted beside %s", o.GetName(), running.GetName())
				g.Expect(podsOf(ctx, g, o)).To(BeEmpty())
			}
		}
	}, "5s", "1s").Should(Succeed())
	return running
}

func nameOf(o client.Object) string {
	if o == nil {
		return "<none>"
	}
	return o.GetName()
}

func other(objs []client.Object, not client.Object) client.Object {
	for _, o := range objs {
		if o != not {
			return o
		}
	}
	return nil
}

var _ = Describe("Kueue", Label(labelKueue), func() {
	BeforeEach(requireKueue)

	// Kueue (its RayCluster integration) suspends both on creation through
	// its webhook, admits the one that fits, and the next once the first is
	// deleted. Gantry makes pods only for the admitted one.
	It("queues RayClusters: one admitted at a time, the next on deletion", func(ctx SpecContext) {
		ns := newNamespace(ctx, "kueue-ray")
		queue := clusterQueue(ctx, ns, "3") // one minimal cluster (2 CPU), not two
		a, b := queuedRayCluster(ns, "ray-a", queue), queuedRayCluster(ns, "ray-b", queue)
		createStrict(ctx, a)
		createStrict(ctx, b)
		for _, rc := range []*rayv1.RayCluster{a, b} {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
			Expect(rc.Spec.Suspend).To(HaveValue(BeTrue()), "Kueue's webhook suspends %s on creation", rc.Name)
		}
		objs := []client.Object{a, b}
		first := expectAdmittedAlone(ctx, objs...)
		Eventually(ctx, func(g Gomega) { expectClusterReady(g, ctx, first.(*rayv1.RayCluster), 1) }).Should(Succeed())

		Expect(k8s.Delete(ctx, first)).To(Succeed())
		next := other(objs, first).(*rayv1.RayCluster)
		Eventually(ctx, func(g Gomega) {
			g.Expect(suspended(ctx, g, next)).To(BeFalse(), "%s admitted after %s was deleted", next.Name, first.GetName())
			expectClusterPodsReady(g, ctx, next, 1)
		}).Should(Succeed())
		Eventually(ctx, func(g Gomega) { expectClusterReady(g, ctx, next, 1) }).Should(Succeed())
	})

	// The RayJob integration (ray.io/rayjob): Kueue suspends each RayJob
	// on creation and admits the one that fits (its cluster and its
	// submitter); Gantry makes a cluster only for that one, and the next
	// once the first is deleted.
	It("queues RayJobs: one admitted at a time, the next on deletion", func(ctx SpecContext) {
		ns := newNamespace(ctx, "kueue-rayjob")
		queue := clusterQueue(ctx, ns, "3") // one job: a minimal cluster (2 CPU) and its submitter
		jobs := make([]*rayv1.RayJob, 2)
		for i, name := range []string{"job-a", "job-b"} {
			rc := queuedRayCluster(ns, name, queue)
			jobs[i] = &rayv1.RayJob{
				// The Ray job outlasts the spec where hack/kwokray simulates it.
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{kueueQueueLabel: queue},
					Annotations: map[string]string{"gantry.dev/kwok-run-seconds": "600"}},
				Spec: rayv1.RayJobSpec{Entrypoint: "python -c 'print(1)'", RayClusterSpec: &rc.Spec, ShutdownAfterJobFinishes: true},
			}
			createStrict(ctx, jobs[i])
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(jobs[i]), jobs[i])).To(Succeed())
			Expect(jobs[i].Spec.Suspend).To(BeTrue(), "Kueue's webhook suspends %s on creation", name)
		}
		objs := []client.Object{jobs[0], jobs[1]}
		first := expectAdmittedAlone(ctx, objs...).(*rayv1.RayJob)
		Expect(first.Status.JobDeploymentStatus).NotTo(Equal(rayv1.JobDeploymentStatusSuspended))

		Expect(k8s.Delete(ctx, first)).To(Succeed())
		next := other(objs, first).(*rayv1.RayJob)
		Eventually(ctx, func(g Gomega) {
			g.Expect(suspended(ctx, g, next)).To(BeFalse(), "%s admitted after %s was deleted", next.Name, first.Name)
			g.Expect(podsOf(ctx, g, next)).NotTo(BeEmpty())
		}).Should(Succeed())
	})

	// The TrainJob integration: the same queueing, and a finished job
	// (Complete) frees its quota for the next.
	It("queues TrainJobs: one admitted at a time, the next when it completes", func(ctx SpecContext) {
		ns := newNamespace(ctx, "kueue-train")
		queue := clusterQueue(ctx, ns, "1500m") // one 1-CPU node, not two
		rt := torchRuntimeWithPodAnnotations(ctx, ns, "torch-runs-10s", map[string]string{"gantry.dev/kwok-run-seconds": "10"})
		a, b := queuedTrainJob(rt, "train-a", queue), queuedTrainJob(rt, "train-b", queue)
		createQueuedTrainJob(ctx, a)
		createQueuedTrainJob(ctx, b)
		objs := []client.Object{a, b}
		first := expectAdmittedAlone(ctx, objs...)
		expectTrainJobCondition(ctx, first.(*trainerv1alpha1.TrainJob), trainerv1alpha1.TrainJobComplete)

		next := other(objs, first).(*trainerv1alpha1.TrainJob)
		Eventually(ctx, func(g Gomega) {
			g.Expect(suspended(ctx, g, next)).To(BeFalse(), "%s admitted after %s completed", next.Name, first.GetName())
			g.Expect(podsOf(ctx, g, next)).NotTo(BeEmpty())
		}).Should(Succeed())
		expectTrainJobCondition(ctx, next, trainerv1alpha1.TrainJobComplete)
	})

	// Preemption: a higher-priority TrainJob takes the quota. Kueue
	// suspends the running one; Gantry suspends its JobSet, whose pods go;
	// once the high-priority job is deleted the first resumes with pods.
	It("preempts a running TrainJob: its pods go, and come back on resume", func(ctx SpecContext) {
		ns := newNamespace(ctx, "kueue-preempt")
		queue := clusterQueue(ctx, ns, "1500m")
		for name, value := range map[string]int64{ns + "-low": 100, ns + "-high": 1000} {
			pc := &unstructured.Unstructured{Object: map[string]any{"value": value}}
			pc.SetAPIVersion(kueueGroupVersion)
			pc.SetKind("WorkloadPriorityClass")
			pc.SetName(name)
			createKueueObject(ctx, pc)
		}
		rt := torchRuntimeWithPodAnnotations(ctx, ns, "torch-runs-long", map[string]string{"gantry.dev/kwok-run-seconds": "600"})
		low := queuedTrainJob(rt, "low", queue)
		low.Labels[kueuePriorityLabel] = ns + "-low"
		createQueuedTrainJob(ctx, low)
		Eventually(ctx, func(g Gomega) {
			g.Expect(suspended(ctx, g, low)).To(BeFalse())
			pods := podsOf(ctx, g, low)
			g.Expect(pods).NotTo(BeEmpty())
			for i := range pods {
				expectScheduledRunningReady(g, &pods[i])
			}
		}).Should(Succeed())

		high := queuedTrainJob(rt, "high", queue)
		high.Labels[kueuePriorityLabel] = ns + "-high"
		createQueuedTrainJob(ctx, high)
		Eventually(ctx, func(g Gomega) {
			g.Expect(suspended(ctx, g, low)).To(BeTrue(), "the low-priority job was not preempted")
			g.Expect(podsOf(ctx, g, low)).To(BeEmpty(), "the preempted job's pods are still there")
			g.Expect(suspended(ctx, g, high)).To(BeFalse(), "the high-priority job was not admitted")
			g.Expect(podsOf(ctx, g, high)).NotTo(BeEmpty())
		}).Should(Succeed())
		expectTrainJobCondition(ctx, low, trainerv1alpha1.TrainJobSuspended)
		js := &jobsetv1alpha2.JobSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(low), js)).To(Succeed())
		Expect(js.Spec.Suspend).To(HaveValue(BeTrue()), "the preempted job's JobSet is suspended")

		Expect(k8s.Delete(ctx, high)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(suspended(ctx, g, low)).To(BeFalse(), "the preempted job did not resume")
			pods := podsOf(ctx, g, low)
			g.Expect(pods).NotTo(BeEmpty(), "the resumed job has no pods")
			for i := range pods {
				expectScheduledRunningReady(g, &pods[i])
			}
		}).Should(Succeed())
		got := &trainerv1alpha1.TrainJob{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(low), got)).To(Succeed())
		Expect(conditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobSuspended)).To(BeFalse(), "Suspended after resume: %v", got.Status.Conditions)
	})
})
