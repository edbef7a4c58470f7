package slurm_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/pkg/framework/apply"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// slinkyOwner is the controller owner reference Slinky's operator sets.
func slinkyOwner(obj client.Object, kind string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: kind, Name: obj.GetName(), UID: obj.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
}

// slinkyLabels are the labels Slinky v1.2's builders put on a component's
// objects: name, instance and component, and no managed-by label at all.
func slinkyLabels(app, instance, component string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/instance": instance, "app.kubernetes.io/component": component}
}

// TestAdoptionFromSlinky: a cluster run by Slinky's operator until now
// (Services, the slurmctld StatefulSet, the slurmrestd Deployment, the
// workers' Service and PodDisruptionBudget, and running slurmd pods, shaped
// and named as Slinky v1.2 makes them) is taken over by Gantry's manager:
// every object is adopted in place (same UID, Gantry's labels), and the
// slurmd pods keep running; none is created twice and none is deleted.
func TestAdoptionFromSlinky(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Start(t, testenv.Options{AddToScheme: slurm.Integration().AddToScheme})
	ctx := context.Background()
	c := env.Client
	const ns = "migrated"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "s3cret-slurm", "jwt.key": "s3cret-jwt"}).Obj())).To(Succeed())

	// What Slinky left: the CRs, and the objects it made for them.
	ctl := slinkytesting.MakeController("slurm", ns).Keys("keys").Obj()
	g.Expect(c.Create(ctx, ctl)).To(Succeed())
	rest := slinkytesting.MakeRestApi("slurm", ns, "slurm").Obj()
	g.Expect(c.Create(ctx, rest)).To(Succeed())
	set := slinkytesting.MakeNodeSet("cpu", ns, "slurm").Obj()
	set.Spec.Replicas = ptr.To[int32](2)
	g.Expect(c.Create(ctx, set)).To(Succeed())

	container := []corev1.Container{{Name: "main", Image: "ghcr.io/slinkyproject/slurmctld:25.11-ubuntu24.04"}}
	template := func(labels map[string]string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: container}}
	}
	ctlLabels := slinkyLabels("slurmctld", "slurm", "controller")
	restLabels := slinkyLabels("slurmrestd", "slurm", "restapi")
	ctlSelector := map[string]string{"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": "slurm"}
	restSelector := map[string]string{"app.kubernetes.io/name": "slurmrestd", "app.kubernetes.io/instance": "slurm"}
	workerSelector := map[string]string{"app.kubernetes.io/name": "slurmd", "slinky.slurm.net/cluster": "slurm"}
	meta := func(name string, labels map[string]string, owner client.Object, kind string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: slinkyOwner(owner, kind)}
	}
	port := func(name string, p int32) []corev1.ServicePort {
		return []corev1.ServicePort{{Name: name, Port: p, TargetPort: intstr.FromString(name)}}
	}
	upstream := []client.Object{
		&corev1.Service{ObjectMeta: meta("slurm-controller", ctlLabels, ctl, slinkyv1beta1.ControllerKind),
			Spec: corev1.ServiceSpec{Selector: ctlSelector, Ports: port("slurmctld", 6817)}},
		&appsv1.StatefulSet{ObjectMeta: meta("slurm-controller", ctlLabels, ctl, slinkyv1beta1.ControllerKind),
			Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: ctlSelector}, ServiceName: "slurm-controller", Template: template(ctlLabels),
				// Slinky's default persistence: slurmctld's state on a claim per pod.
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "statesave"},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("4Gi")}}}}}}},
		&appsv1.Deployment{ObjectMeta: meta("slurm-restapi", restLabels, rest, slinkyv1beta1.RestApiKind),
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: restSelector}, Template: template(restLabels)}},
		&corev1.Service{ObjectMeta: meta("slurm-restapi", restLabels, rest, slinkyv1beta1.RestApiKind),
			Spec: corev1.ServiceSpec{Selector: restSelector, Ports: port("slurmrestd", 6820)}},
		// Shared by every NodeSet of the cluster: Slinky removes the owner
		// reference it builds them with, so they have none.
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "slurm-workers-slurm", Namespace: ns, Labels: workerSelector},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: workerSelector, Ports: port("slurmd", 6818)}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "slurm-workers-pdb-slurm", Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{slinkyv1beta1.LabelNodeSetPodProtect: "true", "slinky.slurm.net/cluster": "slurm"}}}},
	}
	for _, name := range []string{"cpu-0", "cpu-1"} {
		labels := slinkyLabels("slurmd", "cpu", "worker")
		labels["slinky.slurm.net/cluster"] = "slurm"
		labels[slinkyv1beta1.LabelNodeSetRevisionHash] = "slinky-made"
		pod := &corev1.Pod{ObjectMeta: meta(name, labels, set, slinkyv1beta1.NodeSetKind),
			Spec: corev1.PodSpec{Hostname: name, Subdomain: "slurm-workers-slurm", NodeName: "node-" + name,
				Containers: []corev1.Container{{Name: "slurmd", Image: "ghcr.io/slinkyproject/slurmd:25.11-ubuntu24.04"}}}}
		upstream = append(upstream, pod)
	}
	uids := map[string]types.UID{}
	kindName := func(o client.Object) string { return o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetName() }
	for _, o := range upstream {
		g.Expect(c.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
		if p, ok := o.(*corev1.Pod); ok {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			g.Expect(c.Status().Update(ctx, p)).To(Succeed())
		}
		gvk, err := c.GroupVersionKindFor(o)
		g.Expect(err).NotTo(HaveOccurred())
		o.GetObjectKind().SetGroupVersionKind(gvk)
		uids[kindName(o)] = o.GetUID()
	}

	// Gantry's manager (its cache options, the slurm integration)
	// replaces Slinky's.
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		return slurm.Integration().SetupWithManager(ctx, mgr, workload.Options{})
	})

	g.Eventually(func(g Gomega) {
		for _, o := range upstream {
			if _, ok := o.(*appsv1.StatefulSet); ok {
				continue // below
			}
			live := o.DeepCopyObject().(client.Object)
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(o), live)).To(Succeed())
			g.Expect(live.GetUID()).To(Equal(uids[kindName(o)]), "%s was re-created", kindName(o))
			g.Expect(live.GetLabels()).To(HaveKeyWithValue(builder.LabelManagedBy, builder.ManagedByGantry), "%s was not adopted", kindName(o))
		}
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

	// slurmctld's StatefulSet is made again, its pods orphaned, not
	// deleted: Slinky's serviceName (its client Service, which has no DNS
	// name per pod) cannot change in place, and Gantry's slurm.conf names
	// the pod under its headless Service, so a pod governed by Slinky's
	// would be found by no slurmd. The StatefulSet controller adopts the
	// running pod and rolls it (Gantry's template differs anyway); it keeps
	// its claim, the claim template being Slinky's. envtest runs no garbage
	// collector: the orphan finalizer is lifted here, as it would do.
	oldSts := &appsv1.StatefulSet{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slurm-controller"}, oldSts)).To(Succeed())
		g.Expect(oldSts.DeletionTimestamp).NotTo(BeNil(), "Slinky's StatefulSet is not being replaced")
		g.Expect(oldSts.Finalizers).To(ContainElement(metav1.FinalizerOrphanDependents), "its pods would be deleted")
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	// Replaced as Slinky left it: a template applied to it first would
	// have its pod rolled under Slinky's serviceName, then again.
	g.Expect(oldSts.Spec.Template.Spec.Containers).To(HaveExactElements(HaveField("Name", "main")),
		"Slinky's StatefulSet was given Gantry's template before it was replaced")
	oldSts.Finalizers = nil
	g.Expect(c.Update(ctx, oldSts)).To(Succeed())
	g.Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slurm-controller"}, sts)).To(Succeed())
		g.Expect(sts.UID).NotTo(Equal(uids["StatefulSet/slurm-controller"]))
		g.Expect(sts.Spec.ServiceName).To(Equal("slurm-controller-internal"))
		g.Expect(sts.Spec.Selector.MatchLabels).To(Equal(ctlSelector), "the running pod would not be adopted")
		g.Expect(sts.Spec.VolumeClaimTemplates).To(ConsistOf(HaveField("Name", "statesave")), "the pod would not keep its state")
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

	// The pods count as the NodeSet's current revision: kept, not rolled,
	// and no third pod was made for a pod the cache could not see.
	current := &slinkyv1beta1.NodeSet{}
	g.Eventually(func(g Gomega) string {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(set), current)).To(Succeed())
		return current.Status.NodeSetHash
	}, 30*time.Second).ShouldNot(BeEmpty())
	g.Consistently(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			g.Expect(p.UID).To(Equal(uids["Pod/"+p.Name]))
			g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s is being deleted", p.Name)
			g.Expect(p.Labels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetRevisionHash, current.Status.NodeSetHash))
		}
	}, 5*time.Second, 250*time.Millisecond).Should(Succeed())

	g.Eventually(func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == "cpu" && (e.Reason == nodeset.ReasonAdopted || e.Reason == nodeset.ReasonSuccessfulCreate || e.Reason == nodeset.ReasonScalingUp) {
				notes = append(notes, e.Reason+": "+e.Note)
			}
		}
		return notes
	}, 30*time.Second).Should(And(
		ContainElement(MatchRegexp(`^Adopted: Adopted \d Pods? made by another operator.*cpu-`)),
		// Adopting a pod is not creating one.
		Not(ContainElement(HavePrefix(nodeset.ReasonSuccessfulCreate))),
		Not(ContainElement(HavePrefix(nodeset.ReasonScalingUp)))))
}

// TestUpgradeFromMergePatch: a Service an earlier Gantry made by create and
// merge patch (manager gantry-slurm, the owned-fields-hash annotation) is
// moved to server-side apply in place: after the manager's first reconcile
// it is the same object, applied, with no Update entry of gantry-slurm left
// in managedFields and without the annotation no Gantry sets any more.
func TestUpgradeFromMergePatch(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Start(t, testenv.Options{AddToScheme: slurm.Integration().AddToScheme})
	ctx := context.Background()
	c := env.Client
	const ns = "upgraded"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "s3cret-slurm", "jwt.key": "s3cret-jwt"}).Obj())).To(Succeed())
	ctl := slinkytesting.MakeController("slurm", ns).Keys("keys").Obj()
	g.Expect(c.Create(ctx, ctl)).To(Succeed())

	old := slurmctld.BuildService(ctl)
	old.Annotations = map[string]string{"gantry.dev/owned-fields-hash": "0123456789abcdef"}
	g.Expect(client.WithFieldOwner(c, slinky.FieldOwner).Create(ctx, old)).To(Succeed())

	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		return slurm.Integration().SetupWithManager(ctx, mgr, workload.Options{})
	})
	g.Eventually(func(g Gomega) {
		live := &corev1.Service{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(old), live)).To(Succeed())
		g.Expect(live.UID).To(Equal(old.UID))
		g.Expect(live.Annotations).To(HaveKey(apply.AnnotationAppliedHash))
		g.Expect(live.Annotations).NotTo(HaveKey("gantry.dev/owned-fields-hash"))
		for _, e := range live.ManagedFields {
			g.Expect(e.Manager == slinky.FieldOwner && e.Operation == metav1.ManagedFieldsOperationUpdate).To(BeFalse(), "managedFields: %+v", live.ManagedFields)
		}
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
