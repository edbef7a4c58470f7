package raycluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/version"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// noPodsQuota forbids every Pod in ns. Its status is filled in by hand, as
// the quota controller would (there is none here), so the API server's
// quota admission rejects Pods with "exceeded quota".
func noPodsQuota(t *testing.T, ns string) *corev1.ResourceQuota {
	t.Helper()
	g := NewWithT(t)
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	g.Expect(k8s.Create(context.Background(), q)).To(Succeed())
	q.Status = corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
		Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
	}
	g.Expect(k8s.Status().Update(context.Background(), q)).To(Succeed())
	return q
}

// A Pod create the API server refuses (here a ResourceQuota) shows as the
// ReplicaFailure condition in the same reconcile, with KubeRay's reason and
// the API server's message; it goes away once Pods can be created.
func TestPodCreateFailureSetsReplicaFailureCondition(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	quota := noPodsQuota(t, ns)
	rc := create(t, raytesting.MakeRayCluster("quota", ns).WorkerGroup("cpu", 1).Obj())

	g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(get(g, rc).Status.Conditions, string(rayv1.RayClusterReplicaFailure))
		g.Expect(cond).NotTo(BeNil(), "no ReplicaFailure condition")
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(rayv1.FailedCreateHeadPod))
		g.Expect(cond.Message).To(ContainSubstring("exceeded quota"))
	}, timeout).Should(Succeed())
	g.Expect(eventMessages(g, rc, string(rayv1.FailedToCreateHeadPod))).NotTo(BeEmpty())

	g.Expect(k8s.Delete(context.Background(), quota)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
		g.Expect(meta.FindStatusCondition(get(g, rc).Status.Conditions, string(rayv1.RayClusterReplicaFailure))).To(BeNil())
	}, timeout).Should(Succeed())
}

// Worker creates that fail after the head exists report FailedCreateWorkerPod.
func TestWorkerCreateFailureSetsReplicaFailureCondition(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("quota-w", ns).Obj())
	g.Eventually(func(g Gomega) { g.Expect(pods(g, rc, headSel)).To(HaveLen(1)) }, timeout).Should(Succeed())
	noPodsQuota(t, ns)

	update(t, rc, func(c *rayv1.RayCluster) {
		c.Spec.WorkerGroupSpecs = raytesting.MakeRayCluster("x", "default").WorkerGroup("cpu", 2).Obj().Spec.WorkerGroupSpecs
	})
	g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(get(g, rc).Status.Conditions, string(rayv1.RayClusterReplicaFailure))
		g.Expect(cond).NotTo(BeNil(), "no ReplicaFailure condition")
		g.Expect(cond.Reason).To(Equal(rayv1.FailedCreateWorkerPod))
		g.Expect(cond.Message).To(ContainSubstring("exceeded quota"))
	}, timeout).Should(Succeed())
}

func headService(g Gomega, rc *rayv1.RayCluster) *corev1.Service {
	svc := &corev1.Service{}
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name + "-head-svc"}, svc)).To(Succeed())
	return svc
}

// The default head Service is headless (clusterIP None), which a NodePort
// Service cannot be, and a Service's clusterIP cannot change in place:
// changing serviceType on a live cluster recreates the Service, says so in
// a Normal event, and never holds up the Pods.
func TestHeadServiceTypeChangeRecreatesServiceAndPodsProceed(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("svctype", ns).WorkerGroup("cpu", 1).Obj())
	var before *corev1.Service
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
		before = headService(g, rc)
	}, timeout).Should(Succeed())
	g.Expect(before.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))

	update(t, rc, func(c *rayv1.RayCluster) {
		c.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
	})
	g.Eventually(func(g Gomega) {
		g.Expect(len(pods(g, rc, groupSel("cpu")))).To(Equal(2), "worker Pods")
		svc := headService(g, rc)
		g.Expect(svc.UID).NotTo(Equal(before.UID))
		g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
		g.Expect(svc.Spec.ClusterIP).NotTo(Equal(corev1.ClusterIPNone))
		g.Expect(svc.OwnerReferences).To(ContainElement(HaveField("Name", rc.Name)))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, "") }, timeout).
		Should(ContainElement(And(ContainSubstring("Recreated head Service"), ContainSubstring("NodePort"))))

	// And back: a cluster IP cannot become None in place either.
	nodePort := headService(g, rc)
	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.HeadGroupSpec.ServiceType = corev1.ServiceTypeClusterIP })
	g.Eventually(func(g Gomega) {
		svc := headService(g, rc)
		g.Expect(svc.UID).NotTo(Equal(nodePort.UID))
		g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		g.Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	}, timeout).Should(Succeed())
}

// A head Service the API server refuses does not stop Pod reconciliation:
// the Pods are reconciled, and the failure shows as a Warning event.
func TestHeadServiceFailureDoesNotBlockPods(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	// A quota of zero Services: the head Service can never be created.
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-services", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}},
	}
	g.Expect(k8s.Create(context.Background(), q)).To(Succeed())
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}
	g.Expect(k8s.Status().Update(context.Background(), q)).To(Succeed())

	rc := create(t, raytesting.MakeRayCluster("nosvc", ns).WorkerGroup("cpu", 2).Obj())
	g.Eventually(func(g Gomega) { g.Expect(len(pods(g, rc, nil))).To(Equal(3), "Pods") }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.FailedToCreateService)) }, timeout).
		ShouldNot(BeEmpty())
}

// upgradeStrategy Recreate set on a live cluster takes effect: the next
// template change recreates the Pods (the head Pod carried the hash from
// the start), and the head Pod records this build's version.
func TestRecreateStrategyAddedLaterTakesEffect(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := create(t, raytesting.MakeRayCluster("late", ns).WorkerGroup("cpu", 1).Obj())
	var head corev1.Pod
	g.Eventually(func(g Gomega) {
		g.Expect(len(pods(g, rc, workerSel))).To(Equal(1))
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		head = heads[0]
	}, timeout).Should(Succeed())

	// Adding the strategy alone recreates nothing.
	update(t, rc, func(c *rayv1.RayCluster) {
		c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
	})
	g.Consistently(func(g Gomega) {
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		g.Expect(heads[0].UID).To(Equal(head.UID))
	}, 2*time.Second).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) {
		c.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.47.0"
	})
	g.Eventually(func(g Gomega) {
		heads := pods(g, rc, headSel)
		g.Expect(heads).To(HaveLen(1))
		g.Expect(heads[0].UID).NotTo(Equal(head.UID), "the head Pod was not recreated")
		workers := pods(g, rc, workerSel)
		g.Expect(workers).To(HaveLen(1))
		g.Expect(workers[0].Spec.Containers[0].Image).To(Equal("rayproject/ray:2.47.0"))
	}, timeout).Should(Succeed())
	g.Expect(pods(g, rc, headSel)[0].Annotations).To(HaveKeyWithValue(rayv1.KubeRayVersion, version.Version))
}

// A RayCluster asking for more Pods than --ray-max-pods-per-cluster (1000 by
// default; the webhooks are off here, as when a cluster predates them) gets
// its head but no workers, a ReplicaFailure condition saying why, and one
// Warning event, not one per reconcile.
func TestPodLimitStopsWorkerCreation(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	w := raytesting.MakeRayCluster("flood", ns).MultiHostWorkerGroup("slice", 600, 2)
	w.Group("slice").MaxReplicas = ptr.To[int32](600)
	rc := create(t, w.Obj())

	g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(get(g, rc).Status.Conditions, string(rayv1.RayClusterReplicaFailure))
		g.Expect(cond).NotTo(BeNil(), "no ReplicaFailure condition")
		g.Expect(cond.Reason).To(Equal(raycluster.ReasonPodLimitExceeded))
		g.Expect(cond.Message).To(ContainSubstring("would have 1201 Pods"))
		g.Expect(cond.Message).To(ContainSubstring("--ray-max-pods-per-cluster"))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(len(pods(g, rc, workerSel))).To(BeZero(), "worker Pods")
		g.Expect(len(pods(g, rc, headSel))).To(Equal(1), "head Pods")
	}, 2*time.Second).Should(Succeed())

	// Reconciles that change nothing do not repeat the Warning.
	update(t, rc, func(c *rayv1.RayCluster) { c.Labels = map[string]string{"poke": "1"} })
	g.Consistently(func(g Gomega) []string { return eventMessages(g, rc, raycluster.ReasonPodLimitExceeded) }, 2*time.Second).
		Should(HaveLen(1))

	// Within the limit again: the workers come and the condition goes.
	update(t, rc, func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2) })
	g.Eventually(func(g Gomega) {
		g.Expect(len(pods(g, rc, workerSel))).To(Equal(4))
		g.Expect(meta.FindStatusCondition(get(g, rc).Status.Conditions, string(rayv1.RayClusterReplicaFailure))).To(BeNil())
	}, timeout).Should(Succeed())
}

// The flood case itself: replicas and numOfHosts at their int32 maximum.
func TestPodLimitStopsInt32MaximumFlood(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	w := raytesting.MakeRayCluster("flood-max", ns).MultiHostWorkerGroup("slice", 2147483647, 2147483647)
	w.Group("slice").MaxReplicas = ptr.To[int32](2147483647)
	rc := create(t, w.Obj())
	g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(get(g, rc).Status.Conditions, string(rayv1.RayClusterReplicaFailure))
		g.Expect(cond).NotTo(BeNil(), "no ReplicaFailure condition")
		g.Expect(cond.Reason).To(Equal(raycluster.ReasonPodLimitExceeded))
		g.Expect(cond.Message).To(ContainSubstring("would have 4611686014132420610 Pods"))
	}, timeout).Should(Succeed())
	g.Expect(len(pods(g, rc, workerSel))).To(BeZero())
}

// The head Service of a new cluster is made with a plain create; an
// annotation later dropped from headServiceAnnotations must still leave
// the Service, as it did when the Service was first applied: the apply
// that follows moves the create's fields into Gantry's apply entry first.
func TestHeadServiceAnnotationDroppedAfterCreate(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	rc := raytesting.MakeRayCluster("svcann", ns).WorkerGroup("cpu", 1).Obj()
	rc.Spec.HeadServiceAnnotations = map[string]string{"example.com/kept": "1", "example.com/dropped": "1"}
	rc = create(t, rc)
	g.Eventually(func(g Gomega) {
		g.Expect(headService(g, rc).Annotations).To(HaveKey("example.com/dropped"))
	}, timeout).Should(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) {
		c.Spec.HeadServiceAnnotations = map[string]string{"example.com/kept": "2"}
	})
	g.Eventually(func(g Gomega) {
		ann := headService(g, rc).Annotations
		g.Expect(ann).To(HaveKeyWithValue("example.com/kept", "2"))
		g.Expect(ann).NotTo(HaveKey("example.com/dropped"))
	}, timeout).Should(Succeed())
	svc := headService(g, rc)
	for _, e := range svc.ManagedFields {
		g.Expect(e.Manager == raycluster.FieldOwner && e.Operation == metav1.ManagedFieldsOperationUpdate).To(BeFalse(),
			"an update entry of %s is left: %+v", raycluster.FieldOwner, svc.ManagedFields)
	}
}
