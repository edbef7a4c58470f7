//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

const rayAutoscalerSample = "ray_v1_raycluster_autoscaler.yaml"

var _ = Describe("RayCluster samples", Label(labelRay), func() {
	// Gantry creates the autoscaler's ServiceAccount, Role and RoleBinding
	// before the pods; the API server lets it create the Role only if the
	// manager itself holds every permission the Role grants (pods/resize
	// included), so under the chart's RBAC this spec fails when the chart's
	// ClusterRole lacks one.
	It("runs the autoscaler sample with its ServiceAccount, Role and RoleBinding", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ray-autoscaler")

		rc := loadSample[rayv1.RayCluster](rayAutoscalerSample)
		rc.Namespace = ns
		createStrict(ctx, rc)

		Eventually(ctx, func(g Gomega) {
			key := types.NamespacedName{Namespace: ns, Name: rc.Name}
			g.Expect(k8s.Get(ctx, key, &corev1.ServiceAccount{})).To(Succeed(), "autoscaler ServiceAccount")
			role := &rbacv1.Role{}
			g.Expect(k8s.Get(ctx, key, role)).To(Succeed(), "autoscaler Role")
			g.Expect(k8s.Get(ctx, key, &rbacv1.RoleBinding{})).To(Succeed(), "autoscaler RoleBinding")
			var grantsResize bool
			for _, r := range role.Rules {
				for _, res := range r.Resources {
					grantsResize = grantsResize || res == "pods/resize"
				}
			}
			g.Expect(grantsResize).To(BeTrue(), "the autoscaler Role grants pods/resize, as KubeRay's does")
		}).Should(Succeed())

		// One worker in small-group; gpu-group starts at zero.
		Eventually(ctx, func(g Gomega) {
			expectClusterPodsReady(g, ctx, rc, 1)
			expectClusterReady(g, ctx, rc, 1)
			head := listPods(g, ctx, ns, map[string]string{rayv1.RayClusterLabelKey: rc.Name, rayv1.RayNodeTypeLabelKey: "head"})
			g.Expect(head).To(HaveLen(1))
			names := []string{}
			for _, c := range head[0].Spec.Containers {
				names = append(names, c.Name)
			}
			g.Expect(names).To(ContainElement("autoscaler"), "the head runs the autoscaler sidecar")
			g.Expect(head[0].Spec.ServiceAccountName).To(Equal(rc.Name), "the head runs as the autoscaler ServiceAccount")
		}).Should(Succeed())
	})

	// Under the chart's RBAC the manager creates the dashboard Ingress and
	// the token Secret, and both clusters become ready.
	It("runs the Ingress and token-auth samples", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ray-ingress-auth")

		ing := loadSample[rayv1.RayCluster]("ray_v1_raycluster_ingress.yaml")
		ing.Namespace = ns
		createStrict(ctx, ing)
		auth := loadSample[rayv1.RayCluster]("ray_v1_raycluster_auth.yaml")
		auth.Namespace = ns
		createStrict(ctx, auth)

		Eventually(ctx, func(g Gomega) {
			ingress := &networkingv1.Ingress{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: ing.Name + "-head-ingress"}, ingress)).To(Succeed())
			g.Expect(ingress.Spec.Rules).NotTo(BeEmpty())
			g.Expect(ingress.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name).To(Equal(ing.Name + "-head-svc"))
			expectClusterPodsReady(g, ctx, ing, 0)
			expectClusterReady(g, ctx, ing, 0)
		}).Should(Succeed())

		Eventually(ctx, func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: auth.Name}, secret)).To(Succeed())
			g.Expect(secret.Data["auth_token"]).NotTo(BeEmpty())
			expectClusterPodsReady(g, ctx, auth, 1)
			expectClusterReady(g, ctx, auth, 1)
			for _, p := range listPods(g, ctx, ns, clusterPodLabels(auth.Name)) {
				g.Expect(p.Spec.Containers[0].Env).To(ContainElement(And(
					HaveField("Name", "RAY_AUTH_TOKEN"), HaveField("ValueFrom.SecretKeyRef.Name", auth.Name))), "pod %s", p.Name)
			}
		}).Should(Succeed())
	})
})
