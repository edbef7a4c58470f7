//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

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

func createMinimalRayCluster(t *testing.T, g *WithT, ns string) *rayv1.RayCluster {
	t.Helper()
	rc := loadSample[rayv1.RayCluster](t, rayMinimalSample)
	rc.Namespace = ns
	createStrict(g, t.Context(), rc)
	return rc
}

// TestRayClusterLifecycle runs the minimal sample on real scheduling, scales
// its worker group and deletes it, leaving the Pods and Services to the
// cluster's garbage collector — the part envtest cannot show.
func TestRayClusterLifecycle(t *testing.T) {
	t.Parallel()
	g := newGomega(t)
	ctx := t.Context()
	ns := newNamespace(t, "ray")
	rc := createMinimalRayCluster(t, g, ns)

	g.Eventually(func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 1) }).Should(Succeed())
	g.Eventually(func(g Gomega) { expectClusterReady(g, ctx, rc, 1) }).Should(Succeed())

	// What `kubectl describe raycluster` shows under Events: the user must be
	// able to see that the head Pod was created, by name.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
	headPod := rc.Status.Head.PodName
	g.Expect(headPod).NotTo(BeEmpty(), "status.head.podName")
	g.Eventually(func(g Gomega) {
		var messages []string
		for _, e := range eventsFor(g, ctx, rc) {
			if e.Type == corev1.EventTypeWarning {
				t.Logf("warning event on the RayCluster: %s: %s", e.Reason, e.Message)
			}
			messages = append(messages, e.Message)
		}
		g.Expect(messages).To(ContainElement(ContainSubstring(headPod)), "no event names the head pod")
	}).Should(Succeed())

	update(g, ctx, rc, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
	g.Eventually(func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 3) }).Should(Succeed())
	g.Eventually(func(g Gomega) { expectClusterReady(g, ctx, rc, 3) }).Should(Succeed())

	// Deletion is the garbage collector's job only if nothing else does it:
	// every Pod and Service must name the RayCluster as controller, and the
	// RayCluster must carry no finalizer of the operator's.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
	g.Expect(rc.Finalizers).To(BeEmpty(), "the minimal sample should need no finalizer")
	pods := listPods(g, ctx, ns, clusterPodLabels(rc.Name))
	g.Expect(pods).To(HaveLen(4))
	for i := range pods {
		expectControlledBy(g, &pods[i], rc)
	}
	services := &corev1.ServiceList{}
	g.Expect(k8s.List(ctx, services, client.InNamespace(ns), client.MatchingLabels(clusterPodLabels(rc.Name)))).To(Succeed())
	g.Expect(services.Items).NotTo(BeEmpty(), "the head Service")
	for i := range services.Items {
		expectControlledBy(g, &services.Items[i], rc)
	}

	g.Expect(k8s.Delete(ctx, rc, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectGone(g, ctx, &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rc.Name}})
		for _, p := range pods {
			expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}})
		}
		for _, s := range services.Items {
			expectGone(g, ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.Name}})
		}
	}).Should(Succeed())
}

// TestRayClusterSuspendResume: suspending removes every Pod and says so in
// the conditions; resuming brings up new Pods and the cluster is ready again.
func TestRayClusterSuspendResume(t *testing.T) {
	t.Parallel()
	g := newGomega(t)
	ctx := t.Context()
	ns := newNamespace(t, "ray-suspend")
	rc := createMinimalRayCluster(t, g, ns)
	g.Eventually(func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 1) }).Should(Succeed())
	g.Eventually(func(g Gomega) { expectClusterReady(g, ctx, rc, 1) }).Should(Succeed())
	before := map[types.UID]bool{}
	for _, p := range listPods(g, ctx, ns, clusterPodLabels(rc.Name)) {
		before[p.UID] = true
	}

	update(g, ctx, rc, func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
	g.Eventually(func(g Gomega) {
		g.Expect(listPods(g, ctx, ns, clusterPodLabels(rc.Name))).To(BeEmpty(), "pods of the suspended cluster")
		got := &rayv1.RayCluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), got)).To(Succeed())
		g.Expect(conditionTrue(got.Status.Conditions, string(rayv1.RayClusterSuspended))).To(BeTrue(), "RayClusterSuspended")
		g.Expect(got.Status.State).To(Equal(rayv1.Suspended))
	}).Should(Succeed())

	update(g, ctx, rc, func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
	g.Eventually(func(g Gomega) { expectClusterPodsReady(g, ctx, rc, 1) }).Should(Succeed())
	g.Eventually(func(g Gomega) { expectClusterReady(g, ctx, rc, 1) }).Should(Succeed())
	for _, p := range listPods(g, ctx, ns, clusterPodLabels(rc.Name)) {
		g.Expect(before).NotTo(HaveKey(p.UID), "pod %s survived the suspend", p.Name)
	}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
	suspended := false
	for _, c := range rc.Status.Conditions {
		if strings.HasPrefix(c.Type, "RayClusterSuspend") && c.Status == metav1.ConditionTrue {
			suspended = true
		}
	}
	g.Expect(suspended).To(BeFalse(), "a suspend condition is still true after resume: %v", rc.Status.Conditions)
}
