//go:build e2e

package e2e

import (
	"context"
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
		controller := &slinkyv1beta1.Controller{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slurm"},
			Spec: slinkyv1beta1.ControllerSpec{
				SlurmKeyRef:    &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: slurmAuthSecret}, Key: "slurm.key"},
				JwtKeyRef:      &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: slurmAuthSecret}, Key: "jwt.key"},
				ConfigFileRefs: []corev1.LocalObjectReference{{Name: "slurm-config-files"}},
			},
		}
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
})

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
