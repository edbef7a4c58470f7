//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
)

var _ = Describe("Slurm, moved from Slinky's operator", Label(labelSlurm), func() {
	// Slinky v1.2 governs slurmctld's StatefulSet by its client Service
	// (serviceName <name>-controller), which gives the pod no DNS name;
	// Gantry's slurm.conf and every --conf-server name the pod under the
	// headless <name>-controller-internal. serviceName cannot change in
	// place, so Gantry deletes Slinky's StatefulSet with its pods orphaned
	// and makes its own. Here the cluster's own garbage collector and
	// StatefulSet controller do the rest: the running pod is orphaned, not
	// deleted; the new StatefulSet adopts it and rolls it once; its state
	// claim is the same claim throughout.
	It("replaces Slinky's slurmctld StatefulSet, keeping its pod until adopted and its state claim", func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		ns := newNamespace(ctx, "slurm-move")
		createSlurmAuth(ctx, ns)

		// Gantry stops before the StatefulSet while a configFileRefs
		// ConfigMap is missing: that holds it back while Slinky's
		// StatefulSet is put in place, as though Slinky's operator had run
		// the cluster until now.
		controller := slurmController(ns)
		controller.Spec.ConfigFileRefs = []corev1.LocalObjectReference{{Name: "slurm-config-files"}}
		createStrict(ctx, controller)

		// Slinky v1.2.1's StatefulSet (controllerbuilder/controller_app.go):
		// its name, selector and claim template, serviceName the client
		// Service, controlled by the Controller.
		selector := map[string]string{"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": controller.Name}
		labels := map[string]string{"app.kubernetes.io/component": "controller"}
		for k, v := range selector {
			labels[k] = v
		}
		stsName := controller.Name + "-controller"
		slinkys := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: stsName, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: slinkyv1beta1.ControllerKind,
					Name: controller.Name, UID: controller.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](1),
				Selector:    &metav1.LabelSelector{MatchLabels: selector},
				ServiceName: stsName,
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "slurmctld", Image: "ghcr.io/slinkyproject/slurmctld:25.11-ubuntu24.04",
						VolumeMounts: []corev1.VolumeMount{{Name: "statesave", MountPath: "/var/spool/slurmctld"}}}}},
				},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "statesave"},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("4Gi")}}}}},
			},
		}
		Expect(k8s.Create(ctx, slinkys)).To(Succeed())
		podKey := client.ObjectKey{Namespace: ns, Name: stsName + "-0"}
		claimKey := client.ObjectKey{Namespace: ns, Name: "statesave-" + stsName + "-0"}
		slinkysPod, claim := &corev1.Pod{}, &corev1.PersistentVolumeClaim{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, podKey, slinkysPod)).To(Succeed())
			expectScheduledRunningReady(g, slinkysPod)
			expectControlledBy(g, slinkysPod, slinkys)
			g.Expect(k8s.Get(ctx, claimKey, claim)).To(Succeed())
			g.Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound))
		}).Should(Succeed())

		// Every version of the pod from here on, as the API server wrote it.
		history := watchPod(ctx, podKey)

		// Gantry goes on.
		Expect(k8s.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slurm-config-files"},
			Data:       map[string]string{"gres.conf": "AutoDetect=off\n"},
		})).To(Succeed())

		sts := &appsv1.StatefulSet{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: stsName}, sts)).To(Succeed())
			g.Expect(sts.UID).NotTo(Equal(slinkys.UID), "Slinky's StatefulSet is still there")
			g.Expect(sts.Spec.ServiceName).To(Equal(controller.Name + "-controller-internal"))
			expectControlledBy(g, sts, controller)
		}).Should(Succeed())
		pod := &corev1.Pod{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, podKey, pod)).To(Succeed())
			g.Expect(pod.UID).NotTo(Equal(slinkysPod.UID), "the pod was not rolled onto Gantry's template")
			expectScheduledRunningReady(g, pod)
			expectControlledBy(g, pod, sts)
			// The pod's DNS name under the headless Service, which
			// slurm.conf's SlurmctldHost names.
			g.Expect(pod.Spec.Hostname).To(Equal(podKey.Name))
			g.Expect(pod.Spec.Subdomain).To(Equal(controller.Name + "-controller-internal"))
			g.Expect(pod.Spec.Volumes).To(ContainElement(And(HaveField("Name", "statesave"),
				HaveField("PersistentVolumeClaim", HaveField("ClaimName", claimKey.Name)))))
		}).Should(Succeed())

		// Slinky's pod was never deleted while Slinky's StatefulSet went:
		// the garbage collector orphaned it and Gantry's StatefulSet took
		// it over before rolling it.
		var owners []string
		for _, p := range history.versions() {
			if p.UID != slinkysPod.UID {
				continue
			}
			if ref := metav1.GetControllerOf(p); ref != nil {
				owners = append(owners, string(ref.UID))
			} else {
				owners = append(owners, "")
			}
			if p.DeletionTimestamp != nil {
				Expect(owners).To(ContainElement(string(sts.UID)),
					"Slinky's pod was deleted before Gantry's StatefulSet adopted it (its controllers in turn: %q)", owners)
				break
			}
		}
		Expect(owners).To(ContainElements(string(slinkys.UID), "", string(sts.UID)),
			"Slinky's pod went from Slinky's StatefulSet, through no owner, to Gantry's")
		// Restarted once: Slinky's pod, then Gantry's, and none between
		// (one rolled under Slinky's StatefulSet would be a third).
		var uids []types.UID
		for _, p := range history.versions() {
			if !slices.Contains(uids, p.UID) {
				uids = append(uids, p.UID)
			}
		}
		Expect(uids).To(Equal([]types.UID{slinkysPod.UID, pod.UID}), "the pods named %s in turn", podKey.Name)

		// The same claim throughout, and not being deleted.
		live := &corev1.PersistentVolumeClaim{}
		Expect(k8s.Get(ctx, claimKey, live)).To(Succeed())
		Expect(live.UID).To(Equal(claim.UID), "slurmctld's state claim was made again")
		Expect(live.DeletionTimestamp).To(BeNil())

		Eventually(ctx, func(g Gomega) []string {
			var reasons []string
			for _, e := range eventsFor(g, ctx, controller) {
				reasons = append(reasons, e.Reason)
			}
			return reasons
		}).Should(ContainElement(slurmctld.ReasonStatefulSetReplaced))
	})

	// A NodeSet Slinky ran has its slurmd pods running, controlled by the
	// NodeSet, with Slinky's labels and revision hash and without Gantry's
	// managed-by label, so Gantry's cache (which selects that label) never
	// sees them. Gantry makes pods of the same names, is told they exist,
	// and takes them over in place: the pods Slinky made go on running (a
	// restart would end every job on them). They count as the current
	// revision until the NodeSet changes; then the rolling update
	// replaces them like any other.
	It("takes over Slinky's running slurmd pods without restarting them, and rolls them on the next change", func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		ns := newNamespace(ctx, "slurm-move-nodes")
		createSlurmAuth(ctx, ns)
		controller := slurmController(ns)
		createStrict(ctx, controller)
		// At zero replicas until Slinky's pods are in place: the NodeSet's
		// UID is their owner.
		nodeSet := &slinkyv1beta1.NodeSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cpu"},
			Spec: slinkyv1beta1.NodeSetSpec{
				ControllerRef:  slinkyv1beta1.ObjectReference{Name: controller.Name},
				Replicas:       ptr.To[int32](0),
				Slurmd:         slinkyv1beta1.ContainerWrapper{Container: corev1.Container{Image: "ghcr.io/slinkyproject/slurmd:25.11-ubuntu24.04"}},
				UpdateStrategy: slinkyv1beta1.NodeSetUpdateStrategy{Type: slinkyv1beta1.RollingUpdateNodeSetStrategyType},
			},
		}
		createStrict(ctx, nodeSet)

		// Slinky v1.2.1's pods (nodesetbuilder: labels, hostname and
		// subdomain; controlled by the NodeSet), reduced to what the
		// takeover reads.
		names := []string{nodeSet.Name + "-0", nodeSet.Name + "-1"}
		slinkys := map[string]*corev1.Pod{}
		for i, name := range names {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
					Labels: map[string]string{
						"app.kubernetes.io/name": "slurmd", "app.kubernetes.io/instance": nodeSet.Name, "app.kubernetes.io/component": "worker",
						"slinky.slurm.net/cluster": controller.Name, slinkyv1beta1.LabelNodeSetRevisionHash: "slinky-made",
						"nodeset.slinky.slurm.net/pod-name": name, "nodeset.slinky.slurm.net/pod-index": fmt.Sprint(i),
					},
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(nodeSet, slinkyv1beta1.NodeSetGVK)}},
				Spec: corev1.PodSpec{Hostname: name, Subdomain: "slurm-workers-" + controller.Name,
					Containers: []corev1.Container{{Name: "slurmd", Image: "ghcr.io/slinkyproject/slurmd:25.11-ubuntu24.04"}}},
			}
			Expect(k8s.Create(ctx, pod)).To(Succeed())
			slinkys[name] = pod
		}
		histories := map[string]*podHistory{}
		Eventually(ctx, func(g Gomega) {
			for _, name := range names {
				pod := &corev1.Pod{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
				expectScheduledRunningReady(g, pod)
			}
		}).Should(Succeed())
		for _, name := range names {
			histories[name] = watchPod(ctx, client.ObjectKey{Namespace: ns, Name: name})
		}

		// The NodeSet at its size, as Slinky had it.
		Expect(k8s.Patch(ctx, nodeSet, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`)))).To(Succeed())
		current := &slinkyv1beta1.NodeSet{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nodeSet), current)).To(Succeed())
			g.Expect(current.Status.ObservedGeneration).To(Equal(current.Generation))
			g.Expect(current.Status.NodeSetHash).NotTo(BeEmpty())
			g.Expect(current.Status.Replicas).To(Equal(int32(2)), "status.replicas")
			g.Expect(current.Status.ReadyReplicas).To(Equal(int32(2)), "status.readyReplicas")
			g.Expect(current.Status.UpdatedReplicas).To(Equal(int32(2)), "status.updatedReplicas: the pods taken over are the current revision")
			for _, name := range names {
				pod := &corev1.Pod{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
				g.Expect(pod.UID).To(Equal(slinkys[name].UID), "%s was made again", name)
				g.Expect(pod.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"), "%s was not taken over", name)
				g.Expect(pod.Labels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetRevisionHash, current.Status.NodeSetHash))
				expectScheduledRunningReady(g, pod)
			}
		}).Should(Succeed())
		// And nothing rolls them afterwards.
		Consistently(ctx, func(g Gomega) {
			for _, name := range names {
				pod := &corev1.Pod{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
				g.Expect(pod.UID).To(Equal(slinkys[name].UID), "%s was made again", name)
				g.Expect(pod.DeletionTimestamp).To(BeNil(), "%s is being deleted", name)
			}
		}, "5s").Should(Succeed())
		for _, name := range names {
			for _, v := range histories[name].versions() {
				Expect(v.UID).To(Equal(slinkys[name].UID), "a second pod held the name %s", name)
				Expect(v.DeletionTimestamp).To(BeNil(), "Slinky's pod %s was deleted", name)
			}
		}
		Eventually(ctx, func(g Gomega) []string {
			var notes []string
			for _, e := range eventsFor(g, ctx, nodeSet) {
				notes = append(notes, e.Reason+": "+e.Message)
			}
			return notes
		}).Should(And(
			ContainElement(And(HavePrefix(nodeset.ReasonAdopted+": "), ContainSubstring(names[0]), ContainSubstring(names[1]))),
			Not(ContainElement(HavePrefix(nodeset.ReasonSuccessfulCreate+": ")))))

		// The next change of the NodeSet rolls them onto Gantry's pods.
		// (Without a RestApi no node can be drained, so each is replaced at
		// once.)
		Expect(k8s.Patch(ctx, nodeSet, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"metadata":{"annotations":{"example.com/rolled":"yes"}}}}}`)))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nodeSet), current)).To(Succeed())
			g.Expect(current.Status.ObservedGeneration).To(Equal(current.Generation))
			g.Expect(current.Status.UpdatedReplicas).To(Equal(int32(2)), "status.updatedReplicas")
			g.Expect(current.Status.ReadyReplicas).To(Equal(int32(2)), "status.readyReplicas")
			for _, name := range names {
				pod := &corev1.Pod{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
				g.Expect(pod.UID).NotTo(Equal(slinkys[name].UID), "%s was not rolled", name)
				g.Expect(pod.Annotations).To(HaveKeyWithValue("example.com/rolled", "yes"))
				g.Expect(pod.Labels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetRevisionHash, current.Status.NodeSetHash))
				expectControlledBy(g, pod, nodeSet)
				expectScheduledRunningReady(g, pod)
			}
		}).Should(Succeed())
	})
})

// slurmController is a Controller "slurm" in ns with the keys
// createSlurmAuth makes.
func slurmController(ns string) *slinkyv1beta1.Controller {
	return &slinkyv1beta1.Controller{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slurm"},
		Spec: slinkyv1beta1.ControllerSpec{
			SlurmKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: slurmAuthSecret}, Key: "slurm.key"},
			JwtKeyRef:   &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: slurmAuthSecret}, Key: "jwt.key"},
		},
	}
}

// podHistory is every version of one pod a watch delivered.
type podHistory struct {
	mu   sync.Mutex
	pods []*corev1.Pod
}

func (h *podHistory) versions() []*corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*corev1.Pod(nil), h.pods...)
}

// watchPod records every version of the pod of that name (every pod of
// that name, in turn) until the spec ends. The watch starts at the pod's
// current version, so it misses nothing written after it returns.
func watchPod(ctx context.Context, key types.NamespacedName) *podHistory {
	GinkgoHelper()
	w, err := clientset.CoreV1().Pods(key.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + key.Name})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	h := &podHistory{}
	go func() {
		defer GinkgoRecover()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				h.mu.Lock()
				h.pods = append(h.pods, p)
				h.mu.Unlock()
			}
		}
	}()
	return h
}
