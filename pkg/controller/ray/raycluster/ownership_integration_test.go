package raycluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// usersService is a Service a user made for their own use: its own
// selector and port, no labels, no owner.
func usersService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "mine"},
			Ports:    []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// expectUntouched checks that the user's objects keep the spec they were
// created with and that Gantry neither owns them nor wrote to them.
func expectUntouched(g Gomega, users []client.Object) {
	for _, o := range users {
		live := o.DeepCopyObject().(client.Object)
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(o), live)).To(Succeed())
		g.Expect(live.GetOwnerReferences()).To(BeEmpty(), "%T %s is the user's", o, o.GetName())
		g.Expect(live.GetLabels()).To(BeEmpty(), "%T %s is the user's", o, o.GetName())
		g.Expect(live.GetResourceVersion()).To(Equal(o.GetResourceVersion()), "%T %s was written to", o, o.GetName())
		for _, m := range live.GetManagedFields() {
			g.Expect(m.Manager).NotTo(Equal(raycluster.FieldOwner), "%T %s is the user's", o, o.GetName())
		}
		switch l := live.(type) {
		case *corev1.Service:
			g.Expect(l.Spec.Selector).To(Equal(map[string]string{"app": "mine"}))
			g.Expect(l.Spec.Ports).To(HaveLen(1))
			g.Expect(l.Spec.Ports[0].Port).To(Equal(int32(80)))
		case *networkingv1.Ingress:
			g.Expect(l.Spec.DefaultBackend.Service.Name).To(Equal("my-web"))
			g.Expect(l.Spec.Rules).To(BeEmpty())
		}
	}
}

// TestUsersIngressAndServeServiceAreNeverTakenOver: an Ingress and a Serve
// Service the user made under the names the cluster would give its own are
// left as they are, as KubeRay v1.7.0 does (reconcileIngressKubernetes
// skips an Ingress it does not control with a FailedToCreateIngress
// Warning; reconcileServeService uses any Service of that name): no owner
// reference, which would garbage-collect them with the cluster, and none
// of their fields rewritten. Each gets a Warning naming it, and the Pods
// are reconciled all the same.
func TestUsersIngressAndServeServiceAreNeverTakenOver(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	const name = "byo"
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-head-ingress"},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "my-web", Port: networkingv1.ServiceBackendPort{Number: 80}},
		}},
	}
	serve := usersService(ns, name+"-serve-svc")
	users := []client.Object{ing, serve}
	for _, o := range users {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}

	rc := raytesting.MakeRayCluster(name, ns).HeadPort("serve", 8000).
		Annotation(rayv1.EnableServeServiceKey, rayv1.EnableServeServiceTrue).WorkerGroup("cpu", 1).Obj()
	rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
	create(t, rc)

	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-head-svc"}, &corev1.Service{})).To(Succeed())
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) { expectUntouched(g, users) }, 2*time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.FailedToCreateIngress)) }, timeout).
		Should(ContainElement(ContainSubstring("Ingress " + ns + "/" + name + "-head-ingress already exists and is not owned by this RayCluster; not modifying it")))
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.FailedToCreateService)) }, timeout).
		Should(ContainElement(ContainSubstring("Service " + ns + "/" + name + "-serve-svc already exists and is not owned by this RayCluster; not modifying it")))
}

// TestUsersHeadServiceIsNeverTakenOverAndHoldsThePods: a Service the user
// made under the head Service's name, or under the headless Service's name
// of a cluster with a multi-host group, is left as it is. As in KubeRay
// v1.7.0, whose createService fails with AlreadyExists (a
// FailedToCreateService Warning) and ends the reconcile before
// reconcilePods, no Pod is created: the workers would reach whatever the
// user's Service selects. Once the user deletes it, the cluster gets its
// Services and its Pods. (One cluster per case: events of one reason on
// one object within minutes are merged into a series that keeps the first
// note only.)
func TestUsersHeadServiceIsNeverTakenOverAndHoldsThePods(t *testing.T) {
	for _, suffix := range []string{"-head-svc", "-headless"} {
		t.Run(suffix[1:], func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			ctx := context.Background()
			name := "byo" + suffix
			user := usersService(ns, name+suffix)
			g.Expect(k8s.Create(ctx, user)).To(Succeed())

			rc := create(t, raytesting.MakeRayCluster(name, ns).MultiHostWorkerGroup("tpu", 1, 2).Obj())
			g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.FailedToCreateService)) }, timeout).
				Should(ContainElement(ContainSubstring("Service " + ns + "/" + name + suffix + " already exists and is not owned by this RayCluster; not modifying it")))
			g.Consistently(func(g Gomega) {
				expectUntouched(g, []client.Object{user})
				g.Expect(pods(g, rc, nil)).To(BeEmpty())
			}, 2*time.Second).Should(Succeed())

			g.Expect(k8s.Delete(ctx, user)).To(Succeed())
			g.Eventually(func(g Gomega) {
				g.Expect(pods(g, rc, nil)).To(HaveLen(3))
				for _, svc := range []string{name + "-head-svc", name + "-headless"} {
					live := &corev1.Service{}
					g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: svc}, live)).To(Succeed())
					g.Expect(metav1.IsControlledBy(live, get(g, rc))).To(BeTrue(), "Service %s", svc)
				}
			}, timeout).Should(Succeed())
		})
	}
}

// TestKubeRayHeadServiceIsStillUpdated: a head Service KubeRay made before
// the migration (the cluster's controller reference, no managed-by label,
// so outside the manager's cache) is the cluster's and is updated in place
// with Gantry's fields, not reported as someone else's.
func TestKubeRayHeadServiceIsStillUpdated(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	const name = "moved"
	rc := raytesting.MakeRayCluster(name, ns).WorkerGroup("cpu", 1).Obj()
	// Invalid (CPUs in both rayStartParams and resources) so that Gantry
	// builds nothing until KubeRay's Service is in place.
	rc.Spec.HeadGroupSpec.RayStartParams["num-cpus"] = "2"
	rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "2"}
	create(t, rc)
	g.Eventually(func(g Gomega) []string { return eventMessages(g, rc, string(rayv1.InvalidRayClusterSpec)) }, timeout).
		ShouldNot(BeEmpty())

	kuberay := usersService(ns, name+"-head-svc")
	kuberay.Spec.ClusterIP = corev1.ClusterIPNone // KubeRay's head Service is headless
	kuberay.Labels = map[string]string{"ray.io/cluster": name, "ray.io/node-type": "head", "app.kubernetes.io/created-by": "kuberay-operator"}
	kuberay.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "ray.io/v1", Kind: "RayCluster", Name: name, UID: get(g, rc).UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	g.Expect(k8s.Create(ctx, kuberay)).To(Succeed())

	update(t, rc, func(c *rayv1.RayCluster) { delete(c.Spec.HeadGroupSpec.RayStartParams, "num-cpus") })
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g, rc, nil)).To(HaveLen(2))
		live := &corev1.Service{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(kuberay), live)).To(Succeed())
		g.Expect(live.UID).To(Equal(kuberay.UID))
		g.Expect(live.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"))
		g.Expect(live.Spec.Selector).To(HaveKeyWithValue("ray.io/cluster", name))
	}, timeout).Should(Succeed())
	g.Expect(eventMessages(g, rc, string(rayv1.FailedToCreateService))).To(BeEmpty())
}
