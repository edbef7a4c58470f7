package raycluster_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// collectGarbage plays the garbage collector, which envtest does not run:
// it deletes the autoscaler RBAC objects in ns that name owner among their
// owners, as the real one does once the owner is gone.
func collectGarbage(g Gomega, ns string, owner types.UID) {
	ctx := context.Background()
	var sas corev1.ServiceAccountList
	var roles rbacv1.RoleList
	var bindings rbacv1.RoleBindingList
	for _, list := range []client.ObjectList{&sas, &roles, &bindings} {
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	}
	var objs []client.Object
	for i := range sas.Items {
		objs = append(objs, &sas.Items[i])
	}
	for i := range roles.Items {
		objs = append(objs, &roles.Items[i])
	}
	for i := range bindings.Items {
		objs = append(objs, &bindings.Items[i])
	}
	for _, o := range objs {
		for _, ref := range o.GetOwnerReferences() {
			if ref.UID == owner {
				g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed())
			}
		}
	}
}

// TestUsersServiceAccountSurvivesTheClusterDeletion: a ServiceAccount the
// user made under the cluster's name (here with an IRSA annotation) is the
// autoscaler's as it is, as in KubeRay v1.7.0, whose
// reconcileAutoscalerServiceAccount creates one only when none exists and
// never adopts it. It must never get an owner reference to the cluster:
// the garbage collector would delete it with the cluster. The Role and
// RoleBinding Gantry created are the cluster's and go with it.
func TestUsersServiceAccountSurvivesTheClusterDeletion(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	const name = "irsa-gc"
	annotations := map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/ray"}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}}
	g.Expect(k8s.Create(ctx, sa)).To(Succeed())

	rc := create(t, raytesting.MakeRayCluster(name, ns).Autoscaling().WorkerGroup("cpu", 1).Obj())
	role, binding := &rbacv1.Role{}, &rbacv1.RoleBinding{}
	g.Eventually(func(g Gomega) {
		head := pods(g, rc, headSel)
		g.Expect(head).To(HaveLen(1))
		g.Expect(head[0].Spec.ServiceAccountName).To(Equal(name))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, role)).To(Succeed())
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, binding)).To(Succeed())
	}, timeout).Should(Succeed())
	uid := get(g, rc).UID
	for _, o := range []client.Object{role, binding} {
		g.Expect(metav1.IsControlledBy(o, get(g, rc))).To(BeTrue(), "Gantry's %T %s belongs to the cluster", o, o.GetName())
	}

	g.Expect(k8s.Delete(ctx, get(g, rc))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc))
	}, timeout).Should(BeTrue())
	collectGarbage(g, ns, uid)

	live := &corev1.ServiceAccount{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sa), live)).To(Succeed(), "the user's ServiceAccount went with the cluster")
	g.Expect(live.OwnerReferences).To(BeEmpty())
	g.Expect(live.Annotations).To(Equal(annotations))
	for _, o := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Gantry's %T is collected with the cluster (err=%v)", o, err)
	}
}
