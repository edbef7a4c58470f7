//go:build e2e

package e2e

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

const rayMinimalSample = "ray_v1_raycluster_minimal.yaml"

func clusterPodLabels(cluster string) map[string]string {
	return map[string]string{rayv1.RayClusterLabelKey: cluster}
}

// expectClusterPodsReady asserts the cluster has exactly one head and the
// given number of workers, all scheduled, Running and Ready.
func expectClusterPodsReady(g Gomega, ctx context.Context, rc *rayv1.RayCluster, workers int) {
	pods := listPods(g, ctx, rc.Namespace, clusterPodLabels(rc.Name))
	var heads, workerPods int
	for i := range pods {
		expectScheduledRunningReady(g, &pods[i])
		switch pods[i].Labels[rayv1.RayNodeTypeLabelKey] {
		case "head":
			heads++
		case "worker":
			workerPods++
		}
	}
	g.Expect(heads).To(Equal(1), "head pods")
	g.Expect(workerPods).To(Equal(workers), "worker pods")
}

func expectClusterReady(g Gomega, ctx context.Context, rc *rayv1.RayCluster, workers int32) {
	got := &rayv1.RayCluster{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), got)).To(Succeed())
	g.Expect(got.Status.State).To(Equal(rayv1.Ready))
	g.Expect(conditionTrue(got.Status.Conditions, string(rayv1.RayClusterProvisioned))).To(BeTrue(), "RayClusterProvisioned")
	g.Expect(conditionTrue(got.Status.Conditions, string(rayv1.RayClusterSuspended))).To(BeFalse(), "RayClusterSuspended")
	g.Expect(got.Status.DesiredWorkerReplicas).To(Equal(workers), "desiredWorkerReplicas")
	g.Expect(got.Status.ReadyWorkerReplicas).To(Equal(workers), "readyWorkerReplicas")
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), "observedGeneration")
}

// createMinimalRayCluster creates the minimal sample in ns.
func createMinimalRayCluster(ctx context.Context, ns string) *rayv1.RayCluster {
	GinkgoHelper()
	rc := loadSample[rayv1.RayCluster](rayMinimalSample)
	rc.Namespace = ns
	createStrict(ctx, rc)
	return rc
}

var _ = Describe("RayCluster", Label(labelRay), func() {
	// The minimal sample on real scheduling: its worker group is scaled and
	// the cluster deleted, leaving the Pods and Services to the cluster's
	// garbage collector — the part envtest cannot show.
	It("runs the minimal sample, scales it up and down and leaves its deletion to the garbage collector", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ray")
		rc := createMinimalRayCluster(ctx, ns)

		Eventually(ctx, func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 1) }).Should(Succeed())
		Eventually(ctx, func(g Gomega) { expectClusterReady(g, ctx, rc, 1) }).Should(Succeed())

		// What `kubectl describe raycluster` shows under Events: the user must be
		// able to see that the head Pod was created, by name, under KubeRay's
		// reason (alerts filter on it).
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
		headPod := rc.Status.Head.PodName
		Expect(headPod).NotTo(BeEmpty(), "status.head.podName")
		Eventually(ctx, func(g Gomega) {
			var messages []string
			for _, e := range eventsFor(g, ctx, rc) {
				if e.Type == corev1.EventTypeWarning {
					GinkgoWriter.Printf("warning event on the RayCluster: %s: %s\n", e.Reason, e.Message)
				}
				messages = append(messages, e.Reason+": "+e.Message)
			}
			g.Expect(messages).To(ContainElement(And(HavePrefix(string(rayv1.CreatedHeadPod)+": "), ContainSubstring(headPod))),
				"no %s event names the head pod", rayv1.CreatedHeadPod)
		}).Should(Succeed())

		update(ctx, rc, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
		Eventually(ctx, func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 3) }).Should(Succeed())
		Eventually(ctx, func(g Gomega) { expectClusterReady(g, ctx, rc, 3) }).Should(Succeed())

		// Deletion is the garbage collector's job only if nothing else does it:
		// every Pod and Service must name the RayCluster as controller, and the
		// RayCluster must carry no finalizer of the operator's.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
		Expect(rc.Finalizers).To(BeEmpty(), "the minimal sample should need no finalizer")
		pods := listPods(Default, ctx, ns, clusterPodLabels(rc.Name))
		Expect(pods).To(HaveLen(4))
		for i := range pods {
			expectControlledBy(Default, &pods[i], rc)
		}
		services := &corev1.ServiceList{}
		Expect(k8s.List(ctx, services, client.InNamespace(ns), client.MatchingLabels(clusterPodLabels(rc.Name)))).To(Succeed())
		Expect(services.Items).NotTo(BeEmpty(), "the head Service")
		for i := range services.Items {
			expectControlledBy(Default, &services.Items[i], rc)
		}

		// Scaling down deletes the surplus workers (no autoscaler here).
		update(ctx, rc, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2) })
		Eventually(ctx, func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 2) }).Should(Succeed())
		Eventually(ctx, func(g Gomega) { expectClusterReady(g, ctx, rc, 2) }).Should(Succeed())

		Expect(k8s.Delete(ctx, rc, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rc.Name}})
			for _, p := range pods {
				expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}})
			}
			for _, s := range services.Items {
				expectGone(g, ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.Name}})
			}
		}).Should(Succeed())
	})

	// Suspending removes every Pod and says so in the conditions; resuming
	// brings up new Pods and the cluster is ready again.
	It("suspends and resumes", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ray-suspend")
		rc := createMinimalRayCluster(ctx, ns)
		Eventually(ctx, func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 1) }).Should(Succeed())
		Eventually(ctx, func(g Gomega) { expectClusterReady(g, ctx, rc, 1) }).Should(Succeed())
		before := map[types.UID]bool{}
		for _, p := range listPods(Default, ctx, ns, clusterPodLabels(rc.Name)) {
			before[p.UID] = true
		}

		update(ctx, rc, func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
		Eventually(ctx, func(g Gomega) {
			g.Expect(listPods(g, ctx, ns, clusterPodLabels(rc.Name))).To(BeEmpty(), "pods of the suspended cluster")
			got := &rayv1.RayCluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), got)).To(Succeed())
			g.Expect(conditionTrue(got.Status.Conditions, string(rayv1.RayClusterSuspended))).To(BeTrue(), "RayClusterSuspended")
			g.Expect(got.Status.State).To(Equal(rayv1.Suspended))
		}).Should(Succeed())

		update(ctx, rc, func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
		Eventually(ctx, func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 1) }).Should(Succeed())
		Eventually(ctx, func(g Gomega) { expectClusterReady(g, ctx, rc, 1) }).Should(Succeed())
		for _, p := range listPods(Default, ctx, ns, clusterPodLabels(rc.Name)) {
			Expect(before).NotTo(HaveKey(p.UID), "pod %s survived the suspend", p.Name)
		}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
		suspended := false
		for _, c := range rc.Status.Conditions {
			if strings.HasPrefix(c.Type, "RayClusterSuspend") && c.Status == metav1.ConditionTrue {
				suspended = true
			}
		}
		Expect(suspended).To(BeFalse(), "a suspend condition is still true after resume: %v", rc.Status.Conditions)
	})
})
