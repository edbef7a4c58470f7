package nodeset_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	"github.com/gantry-dev/gantry/test/testenv"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestNodeSetIntegration(t *testing.T) {
	h := startHarness(t)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	g := NewWithT(t)
	h.namespace(g, "slurm-it")
	for _, name := range []string{"slurm", "norest", "offline", "pending"} {
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeController(name, h.ns).Keys("keys").Obj())).To(Succeed())
	}
	slurmd := h.clients.add(h.key("slurm"))
	offline := h.clients.add(h.key("offline"))

	t.Run("scale 0 to 5 to 2 drains before deleting", func(t *testing.T) {
		g := NewWithT(t)
		ns := slinkytesting.MakeNodeSet("cpu", h.ns, "slurm").Obj()
		ns.Spec.Replicas = ptr.To[int32](0)
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())

		svc := &corev1.Service{}
		g.Eventually(func() error { return h.c.Get(h.ctx, h.key("slurm-workers-slurm"), svc) }).Should(Succeed())
		g.Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"app.kubernetes.io/name": "slurmd", "slinky.slurm.net/cluster": "slurm"}))
		g.Expect(svc.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"))
		pdb := &policyv1.PodDisruptionBudget{}
		g.Eventually(func() error { return h.c.Get(h.ctx, h.key("slurm-workers-pdb-slurm"), pdb) }).Should(Succeed())
		g.Expect(pdb.Spec.MaxUnavailable).To(Equal(ptr.To(intstr.FromInt32(0))))
		g.Expect(pdb.Spec.Selector.MatchLabels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetPodProtect, "true"))

		h.updateNodeSet(g, "cpu", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](5) })
		g.Eventually(h.liveNames("cpu")).Should(Equal([]string{"cpu-0", "cpu-1", "cpu-2", "cpu-3", "cpu-4"}))
		pod := &corev1.Pod{}
		g.Expect(h.c.Get(h.ctx, h.key("cpu-3"), pod)).To(Succeed())
		g.Expect(pod.Spec.Hostname).To(Equal("cpu-3"))
		g.Expect(pod.Spec.Subdomain).To(Equal("slurm-workers-slurm"))
		g.Expect(pod.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "gantry"))
		g.Expect(metav1.GetControllerOf(pod)).To(HaveField("Kind", "NodeSet"))

		// One event for the whole scale-out, not one per pod.
		g.Eventually(func(g Gomega) []string {
			list := &eventsv1.EventList{}
			g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Name == "cpu" && (e.Reason == nodeset.ReasonSuccessfulCreate || e.Reason == nodeset.ReasonScalingUp) {
					notes = append(notes, e.Reason+": "+e.Note)
				}
			}
			return notes
		}).Should(ConsistOf("SuccessfulCreate: Created 5 Pods", "ScalingUp: Created 5 Pods"))

		h.kubelet(g, "cpu", slurmd)
		// Keep cpu-0 and cpu-1 (costly to lose); cpu-4 runs a job.
		for _, name := range []string{"cpu-0", "cpu-1"} {
			g.Expect(h.c.Get(h.ctx, h.key(name), pod)).To(Succeed())
			patch := client.MergeFrom(pod.DeepCopy())
			pod.Annotations = map[string]string{slinkyv1beta1.AnnotationPodDeletionCost: "100"}
			g.Expect(h.c.Patch(h.ctx, pod, patch)).To(Succeed())
		}
		slurmd.SetNode(slurm.Node{Name: "cpu-4", State: []slurm.NodeState{slurm.NodeStateAllocated}, AllocCPUs: 4})
		slurmd.SetJobs(slurm.Job{JobID: 7, Nodes: "cpu-4", State: []slurm.JobState{slurm.JobStateRunning},
			EndTime: slurm.NewNoVal(time.Now().Add(time.Hour).Unix()), TimeLimit: slurm.NewNoVal(120)})
		h.poke(g, "cpu-4")
		g.Eventually(func(g Gomega) map[string]string {
			g.Expect(h.c.Get(h.ctx, h.key("cpu-4"), pod)).To(Succeed())
			return pod.Labels
		}).Should(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetPodProtect, "true"), "a pod running a job is protected by the PDB")
		g.Expect(pod.Annotations).To(HaveKey(slinkyv1beta1.AnnotationPodDeadline))

		h.updateNodeSet(g, "cpu", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](2) })
		g.Eventually(h.liveNames("cpu")).Should(Equal([]string{"cpu-0", "cpu-1", "cpu-4"}))
		for _, name := range []string{"cpu-2", "cpu-3"} {
			node, _ := slurmd.Node(name)
			g.Expect(node.IsDrain()).To(BeTrue(), "%s was deleted without being drained first", name)
		}
		// cpu-4 is drained and cordoned in the same reconcile as the other
		// deletions, possibly after the cache shows them.
		var busy slurm.Node
		g.Eventually(func(g Gomega) {
			busy, _ = slurmd.Node("cpu-4")
			g.Expect(busy.IsDrain()).To(BeTrue())
			g.Expect(busy.Reason).To(HavePrefix("slurm-operator: "))
			g.Expect(h.c.Get(h.ctx, h.key("cpu-4"), pod)).To(Succeed())
			g.Expect(pod.Annotations).To(HaveKeyWithValue(slinkyv1beta1.AnnotationPodCordon, "true"))
		}).Should(Succeed())
		g.Consistently(h.liveNames("cpu")).Should(ContainElement("cpu-4"), "a pod whose node runs a job must not be deleted")

		// The job ends; the next reconcile finds the node drained and idle.
		slurmd.SetJobs()
		slurmd.SetNode(slurm.Node{Name: "cpu-4", State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: busy.Reason})
		h.poke(g, "cpu-4")
		g.Eventually(h.liveNames("cpu")).Should(Equal([]string{"cpu-0", "cpu-1"}))
		g.Eventually(func(g Gomega) slinkyv1beta1.NodeSetStatus { return h.nodeSet(g, "cpu").Status }).Should(And(
			HaveField("Replicas", int32(2)), HaveField("ReadyReplicas", int32(2)), HaveField("SlurmIdle", int32(2)),
			HaveField("Desired", int32(2)), HaveField("Selector", "app.kubernetes.io/instance=cpu,app.kubernetes.io/name=slurmd")))
	})

	t.Run("a converged reconcile writes nothing and lists Slurm nodes once", func(t *testing.T) {
		g := NewWithT(t)
		// The second reconciler writes through the manager's cache-backed
		// client: it needs the field indexes.
		writes := &testenv.WriteCounter{}
		r := nodeset.NewReconcilerForTest(writes.Client(withoutWatch{h.mgr.GetClient()}), h.mgr.GetAPIReader(), h.clients, nil)
		req := reconcile.Request{NamespacedName: h.key("cpu")}
		g.Eventually(func(g Gomega) int64 {
			before := writes.Total()
			_, err := r.Reconcile(h.ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			return writes.Total() - before
		}).Should(BeZero())
		updates, lists, gets := len(slurmd.Updates()), slurmd.Calls(fake.OpListNodes), slurmd.Calls(fake.OpGetNode)
		before := writes.Total()
		_, err := r.Reconcile(h.ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(writes.Total() - before).To(BeZero())
		g.Expect(len(slurmd.Updates())).To(Equal(updates), "no Slurm write either")
		// The manager may reconcile concurrently, so only a lower bound on
		// lists holds; per-pod GETs would show up whatever it does.
		g.Expect(slurmd.Calls(fake.OpListNodes) - lists).To(BeNumerically(">=", 1))
		g.Expect(slurmd.Calls(fake.OpGetNode)-gets).To(BeZero(), "no per-pod Slurm reads")
	})

	t.Run("cordoning a Kubernetes Node drains the Slurm node of its pod", func(t *testing.T) {
		g := NewWithT(t)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kn-1"}}
		pod := h.onePodOn(g, "cord", node, slurmd)

		node.Spec.Unschedulable = true
		node.Annotations = map[string]string{slinkyv1beta1.AnnotationNodeCordonReason: "kernel\nupgrade"}
		g.Expect(h.c.Update(h.ctx, node)).To(Succeed())
		g.Eventually(func() string {
			n, _ := slurmd.Node("cord-0")
			if !n.IsDrain() {
				return ""
			}
			return n.Reason
		}).Should(Equal("slurm-operator: kernel upgrade"))
		g.Eventually(func(g Gomega) map[string]string {
			g.Expect(h.c.Get(h.ctx, h.key("cord-0"), pod)).To(Succeed())
			return pod.Annotations
		}).Should(HaveKeyWithValue(slinkyv1beta1.AnnotationPodCordon, "true"))
		g.Eventually(h.eventNotes("cord", nodeset.ReasonNodeCordon)).Should(ContainElement(ContainSubstring("cord-0")))

		g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		node.Spec.Unschedulable = false
		g.Expect(h.c.Update(h.ctx, node)).To(Succeed())
		g.Eventually(func() bool { n, _ := slurmd.Node("cord-0"); return n.IsDrain() }).Should(BeFalse())
		g.Eventually(func(g Gomega) map[string]string {
			g.Expect(h.c.Get(h.ctx, h.key("cord-0"), pod)).To(Succeed())
			return pod.Annotations
		}).ShouldNot(HaveKey(slinkyv1beta1.AnnotationPodCordon))

		// An administrator's drain is never lifted.
		slurmd.SetNode(slurm.Node{Name: "cord-0", State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: "bad DIMM"})
		h.poke(g, "cord-0")
		g.Consistently(func() string { n, _ := slurmd.Node("cord-0"); return n.Reason }).Should(Equal("bad DIMM"))
	})

	t.Run("cordons Slinky set before the move are lifted as Slinky lifts them, a person's are kept", func(t *testing.T) {
		g := NewWithT(t)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kn-moved"}}
		pod := h.onePodOn(g, "moved", node, slurmd)
		// leftBy puts the pod and its Slurm node as an operator left them:
		// pod-cordon set, the node drained with the given reason.
		leftBy := func(reason string) {
			slurmd.SetNode(slurm.Node{Name: "moved-0", State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: reason})
			g.Expect(h.c.Get(h.ctx, h.key("moved-0"), pod)).To(Succeed())
			patch := client.MergeFrom(pod.DeepCopy())
			pod.Annotations = map[string]string{slinkyv1beta1.AnnotationPodCordon: "true"}
			g.Expect(h.c.Patch(h.ctx, pod, patch)).To(Succeed())
		}
		lifted := func(g Gomega) {
			n, _ := slurmd.Node("moved-0")
			g.Expect(n.IsDrain()).To(BeFalse(), "still drained: %q", n.Reason)
			g.Expect(h.c.Get(h.ctx, h.key("moved-0"), pod)).To(Succeed())
			g.Expect(pod.Annotations).NotTo(HaveKey(slinkyv1beta1.AnnotationPodCordon))
		}

		// A person's cordon (Slinky's reason for it) stays.
		leftBy("slurm-operator: Pod (" + h.ns + "/moved-0) was cordoned")
		g.Consistently(func() bool { n, _ := slurmd.Node("moved-0"); return n.IsDrain() }).Should(BeTrue())

		// Slinky cordoned the pod for its Node, which is no longer cordoned.
		leftBy("slurm-operator: Node (kn-moved) was cordoned, Pod (" + h.ns + "/moved-0) must be cordoned")
		g.Eventually(lifted).Should(Succeed())

		// Slinky was scaling the NodeSet in; Gantry keeps the pod.
		leftBy("slurm-operator: Pod (" + h.ns + "/moved-0) is pending termination for scale-in")
		g.Eventually(lifted).Should(Succeed())
		g.Expect(h.liveNames("moved")(g)).To(Equal([]string{"moved-0"}))
	})

	t.Run("a Node's topology annotation reaches its pod and Slurm node", func(t *testing.T) {
		g := NewWithT(t)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kn-topo",
			Annotations: map[string]string{slinkyv1beta1.AnnotationNodeTopologySpec: "topo-switch:s1"}}}
		pod := h.onePodOn(g, "topo", node, slurmd)
		podTopology := func(g Gomega) map[string]string {
			g.Expect(h.c.Get(h.ctx, h.key("topo-0"), pod)).To(Succeed())
			return pod.Annotations
		}
		g.Eventually(podTopology).Should(HaveKeyWithValue(slinkyv1beta1.AnnotationNodeTopologySpec, "topo-switch:s1"))
		g.Eventually(func() string { n, _ := slurmd.Node("topo-0"); return n.Topology }).Should(Equal("topo-switch:s1"))

		// The pod shows its node's Slurm state, and the node names its pod.
		conditionTypes := func(g Gomega) []corev1.PodConditionType {
			g.Expect(h.c.Get(h.ctx, h.key("topo-0"), pod)).To(Succeed())
			var out []corev1.PodConditionType
			for _, c := range pod.Status.Conditions {
				out = append(out, c.Type)
			}
			return out
		}
		g.Eventually(conditionTypes).Should(ContainElement(corev1.PodConditionType("SlurmNodeStateIdle")))
		g.Eventually(func() string { n, _ := slurmd.Node("topo-0"); return n.Comment }).Should(MatchJSON(
			`{"namespace":"` + h.ns + `","podName":"topo-0","node":"kn-topo","nodeSetName":"topo","nodeSetUID":"` + string(h.nodeSet(g, "topo").UID) + `"}`))
		slurmd.SetNode(slurm.Node{Name: "topo-0", State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: "bad DIMM",
			Topology: "topo-switch:s1", Comment: func() string { n, _ := slurmd.Node("topo-0"); return n.Comment }()})
		h.poke(g, "topo-0")
		g.Eventually(conditionTypes).Should(ContainElements(corev1.PodConditionType("SlurmNodeStateIdle"), corev1.PodConditionType("SlurmNodeStateDrain")))
		g.Expect(conditionTypes(g)).To(ContainElement(corev1.PodReady), "the kubelet's conditions stay")

		// The Node moves to another switch: both follow.
		g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		node.Annotations[slinkyv1beta1.AnnotationNodeTopologySpec] = "topo-switch:s2"
		g.Expect(h.c.Update(h.ctx, node)).To(Succeed())
		g.Eventually(podTopology).Should(HaveKeyWithValue(slinkyv1beta1.AnnotationNodeTopologySpec, "topo-switch:s2"))
		g.Eventually(func() string { n, _ := slurmd.Node("topo-0"); return n.Topology }).Should(Equal("topo-switch:s2"))

		// Without the annotation the pod's copy goes, and the Slurm node
		// keeps what it has (it may come from slurmd or an administrator).
		g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		delete(node.Annotations, slinkyv1beta1.AnnotationNodeTopologySpec)
		g.Expect(h.c.Update(h.ctx, node)).To(Succeed())
		g.Eventually(podTopology).ShouldNot(HaveKey(slinkyv1beta1.AnnotationNodeTopologySpec))
		g.Consistently(func() string { n, _ := slurmd.Node("topo-0"); return n.Topology }).Should(Equal("topo-switch:s2"))
	})

	t.Run("a failed pod is recreated only after its back-off", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("flaky", h.ns, "norest").Obj())).To(Succeed())
		g.Eventually(h.liveNames("flaky")).Should(Equal([]string{"flaky-0"}))
		pod := &corev1.Pod{}
		g.Expect(h.c.Get(h.ctx, h.key("flaky-0"), pod)).To(Succeed())
		failedUID := pod.UID
		pod.Status.Phase = corev1.PodFailed
		g.Expect(h.c.Status().Update(h.ctx, pod)).To(Succeed())
		failedAt := time.Now()
		g.Eventually(func() bool {
			err := h.c.Get(h.ctx, h.key("flaky-0"), pod)
			return apierrors.IsNotFound(err) || (err == nil && pod.UID != failedUID)
		}).Should(BeTrue(), "the failed pod is deleted")
		// Not at once: the first back-off is 10 s.
		g.Consistently(func() error { return h.c.Get(h.ctx, h.key("flaky-0"), &corev1.Pod{}) }).
			WithTimeout(nodeset.FailedPodBackoffInitial - 3*time.Second).Should(MatchError(apierrors.IsNotFound, "NotFound"))
		g.Eventually(func() error { return h.c.Get(h.ctx, h.key("flaky-0"), pod) }).WithTimeout(20 * time.Second).Should(Succeed())
		g.Expect(time.Since(failedAt)).To(BeNumerically(">=", nodeset.FailedPodBackoffInitial-time.Second))
		g.Expect(pod.UID).NotTo(Equal(failedUID))
	})

	t.Run("rolling update respects maxUnavailable", func(t *testing.T) {
		g := NewWithT(t)
		ns := slinkytesting.MakeNodeSet("roll", h.ns, "slurm").Obj()
		ns.Spec.Replicas = ptr.To[int32](3)
		ns.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())
		g.Eventually(h.liveNames("roll")).Should(HaveLen(3))
		h.kubelet(g, "roll", slurmd)
		oldHash := h.pods(g, "roll")[0].Labels[slinkyv1beta1.LabelNodeSetRevisionHash]

		h.updateNodeSet(g, "roll", func(n *slinkyv1beta1.NodeSet) { n.Spec.Slurmd.Image = "slurmd:next" })
		byHash := func(g Gomega) (updated, old int) {
			for _, p := range h.pods(g, "roll") {
				switch {
				case p.DeletionTimestamp != nil:
				case p.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] == oldHash:
					old++
				default:
					updated++
				}
			}
			return updated, old
		}
		for step := 1; step <= 3; step++ {
			g.Eventually(func(g Gomega) int { u, _ := byHash(g); return u }).Should(Equal(step))
			// Until the new pod is ready no other old pod may go.
			g.Consistently(func(g Gomega) int { _, o := byHash(g); return o }).Should(Equal(3 - step))
			h.kubelet(g, "roll", slurmd)
		}
		for _, p := range h.pods(g, "roll") {
			g.Expect(p.Spec.Containers[0].Image).To(Equal("slurmd:next"))
		}
	})

	t.Run("OnDelete replaces a pod only when it is deleted", func(t *testing.T) {
		g := NewWithT(t)
		ns := slinkytesting.MakeNodeSet("ondel", h.ns, "slurm").Obj()
		ns.Spec.Replicas = ptr.To[int32](2)
		ns.Spec.UpdateStrategy.Type = slinkyv1beta1.OnDeleteNodeSetStrategyType
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())
		g.Eventually(h.liveNames("ondel")).Should(HaveLen(2))
		h.kubelet(g, "ondel", slurmd)
		h.updateNodeSet(g, "ondel", func(n *slinkyv1beta1.NodeSet) { n.Spec.Slurmd.Image = "slurmd:next" })
		g.Eventually(func(g Gomega) string { return h.nodeSet(g, "ondel").Status.NodeSetHash }).
			ShouldNot(Equal(h.pods(g, "ondel")[0].Labels[slinkyv1beta1.LabelNodeSetRevisionHash]))
		images := func(g Gomega) []string {
			var out []string
			for _, p := range h.pods(g, "ondel") {
				out = append(out, p.Name+"="+p.Spec.Containers[0].Image)
			}
			return out
		}
		g.Consistently(images).Should(Equal([]string{"ondel-0=" + defaultSlurmdImage, "ondel-1=" + defaultSlurmdImage}))
		g.Expect(h.c.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ondel-0", Namespace: h.ns}})).To(Succeed())
		g.Eventually(images).Should(Equal([]string{"ondel-0=slurmd:next", "ondel-1=" + defaultSlurmdImage}))
	})

	t.Run("revision history is truncated to the limit", func(t *testing.T) {
		g := NewWithT(t)
		ns := slinkytesting.MakeNodeSet("hist", h.ns, "slurm").Obj()
		ns.Spec.Replicas = ptr.To[int32](0)
		ns.Spec.RevisionHistoryLimit = 1
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())
		revisions := func(g Gomega) []appsv1.ControllerRevision {
			list := &appsv1.ControllerRevisionList{}
			g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns), client.MatchingLabels{"app.kubernetes.io/instance": "hist"})).To(Succeed())
			return list.Items
		}
		g.Eventually(revisions).Should(HaveLen(1))
		for _, image := range []string{"a", "b", "c"} {
			h.updateNodeSet(g, "hist", func(n *slinkyv1beta1.NodeSet) { n.Spec.Slurmd.Image = "slurmd:" + image })
			// status.nodeSetHash names the revision recording the new image.
			g.Eventually(func(g Gomega) string {
				rev := &appsv1.ControllerRevision{}
				g.Expect(h.c.Get(h.ctx, h.key("hist-"+h.nodeSet(g, "hist").Status.NodeSetHash), rev)).To(Succeed())
				return string(rev.Data.Raw)
			}).Should(ContainSubstring(`"image":"slurmd:` + image + `"`))
		}
		g.Eventually(revisions).Should(HaveLen(2), "the update revision plus one of history")
		status := h.nodeSet(g, "hist").Status
		g.Expect(revisions(g)).To(ContainElement(HaveField("ObjectMeta.Name", "hist-"+status.NodeSetHash)))
	})

	t.Run("an orphan pod is adopted", func(t *testing.T) {
		g := NewWithT(t)
		orphan := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "adopt-0", Namespace: h.ns, Labels: map[string]string{
				"app.kubernetes.io/name": "slurmd", "app.kubernetes.io/instance": "adopt", "app.kubernetes.io/managed-by": "gantry",
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "slurmd", Image: "slurmd:old"}}},
		}
		g.Expect(h.c.Create(h.ctx, orphan)).To(Succeed())
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("adopt", h.ns, "slurm").Obj())).To(Succeed())
		owner := h.nodeSet(g, "adopt")
		g.Eventually(func(g Gomega) *metav1.OwnerReference {
			g.Expect(h.c.Get(h.ctx, h.key("adopt-0"), orphan)).To(Succeed())
			return metav1.GetControllerOf(orphan)
		}).Should(And(Not(BeNil()), HaveField("UID", owner.UID)))
		// The adopted pod fills the replica: no second pod is created. (It
		// carries no revision hash, so the rolling update may replace it,
		// under the same name, while we watch.)
		g.Consistently(h.liveNames("adopt")).Should(Or(BeEmpty(), Equal([]string{"adopt-0"})), "the adopted pod fills the replica")
	})

	t.Run("without a RestApi pods are managed by Kubernetes state alone", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("plain", h.ns, "norest").Obj())).To(Succeed())
		g.Eventually(h.liveNames("plain")).Should(Equal([]string{"plain-0"}))
		h.kubelet(g, "plain", nil)
		h.updateNodeSet(g, "plain", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](0) })
		g.Eventually(h.liveNames("plain")).Should(BeEmpty())
		g.Expect(meta.FindStatusCondition(h.nodeSet(g, "plain").Status.Conditions, nodeset.ConditionSlurmReachable)).To(BeNil())
	})

	t.Run("with a RestApi whose Slurm client is not known yet nothing that may run jobs is deleted", func(t *testing.T) {
		// After a manager restart or failover, or while the JWT key cannot
		// be read, the Controller has a RestApi but no client is known. That
		// is not "no RestApi": Slurm may be running jobs on every node.
		g := NewWithT(t)
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeRestApi("pending-rest", h.ns, "pending").Obj())).To(Succeed())
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("wait", h.ns, "pending").Obj())).To(Succeed())
		g.Eventually(h.liveNames("wait")).Should(Equal([]string{"wait-0"}))
		h.kubelet(g, "wait", nil)
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "wait").Status.Conditions, nodeset.ConditionSlurmReachable)
		}).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("pending-rest"))))

		h.updateNodeSet(g, "wait", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](0) })
		g.Consistently(h.liveNames("wait")).Should(Equal([]string{"wait-0"}),
			"a running pod was deleted while Slurm's state was unknown")

		// The client becomes known: the node is drained, found idle, and
		// only then deleted.
		pending := h.clients.add(h.key("pending"))
		pending.SetNode(slurm.Node{Name: "wait-0", State: []slurm.NodeState{slurm.NodeStateIdle}})
		h.poke(g, "wait-0")
		g.Eventually(h.liveNames("wait")).Should(BeEmpty())
		node, _ := pending.Node("wait-0")
		g.Expect(node.IsDrain()).To(BeTrue(), "wait-0 was deleted without being drained first")
	})

	t.Run("a Controller whose RestApi goes keeps failing closed until the user opts out", func(t *testing.T) {
		// A Helm rename or a GitOps replace deletes the RestApi for a while:
		// Slurm's state is then unknown, not empty, and a pod whose node
		// runs a job must not be deleted as if every node were drained.
		g := NewWithT(t)
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeController("renamed-rest", h.ns).Keys("keys").Obj())).To(Succeed())
		f := h.clients.add(h.key("renamed-rest"))
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("kept", h.ns, "renamed-rest").Obj())).To(Succeed())
		g.Eventually(h.liveNames("kept")).Should(Equal([]string{"kept-0"}))
		h.kubelet(g, "kept", f)
		f.SetNode(slurm.Node{Name: "kept-0", State: []slurm.NodeState{slurm.NodeStateAllocated, slurm.NodeStateDrain}, AllocCPUs: 1, Reason: "x"})
		h.poke(g, "kept-0")
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "kept").Status.Conditions, nodeset.ConditionSlurmReachable)
		}).Should(HaveField("Status", metav1.ConditionTrue))

		h.clients.remove(h.key("renamed-rest"))
		h.updateNodeSet(g, "kept", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](0) })
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "kept").Status.Conditions, nodeset.ConditionSlurmReachable)
		}).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", nodeset.ReasonSlurmRestApiGone),
			HaveField("Message", ContainSubstring(slinkyv1beta1.AnnotationSlurmWithoutRestApi))))
		g.Consistently(h.liveNames("kept")).Should(Equal([]string{"kept-0"}),
			"a pod whose node ran a job was deleted once the RestApi was gone")

		// The user says the cluster now runs without a RestApi on purpose.
		c := &slinkyv1beta1.Controller{}
		g.Expect(h.c.Get(h.ctx, h.key("renamed-rest"), c)).To(Succeed())
		patch := client.MergeFrom(c.DeepCopy())
		c.Annotations = map[string]string{slinkyv1beta1.AnnotationSlurmWithoutRestApi: "true"}
		// The Controller watch wakes the NodeSet.
		g.Expect(h.c.Patch(h.ctx, c, patch)).To(Succeed())
		g.Eventually(h.liveNames("kept")).Should(BeEmpty())
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "kept").Status.Conditions, nodeset.ConditionSlurmReachable)
		}).Should(BeNil())
	})

	t.Run("a Ready pod whose node Slurm does not list is kept and reported", func(t *testing.T) {
		// slurmd registered under another name (e.g. the host's FQDN): Gantry
		// cannot see the node's jobs, so it must not delete the pod.
		g := NewWithT(t)
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeController("renamed", h.ns).Keys("keys").Obj())).To(Succeed())
		renamed := h.clients.add(h.key("renamed"))
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("named", h.ns, "renamed").Obj())).To(Succeed())
		g.Eventually(h.liveNames("named")).Should(Equal([]string{"named-0"}))
		h.kubelet(g, "named", nil)
		renamed.SetNode(slurm.Node{Name: "named-0.example.org", State: []slurm.NodeState{slurm.NodeStateAllocated}})

		h.updateNodeSet(g, "named", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](0) })
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "named").Status.Conditions, nodeset.ConditionSlurmNodesFound)
		}).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", nodeset.ReasonSlurmNodeNotFound), HaveField("Message", ContainSubstring("pod named-0 (node named-0)"))))
		g.Consistently(h.liveNames("named")).Should(Equal([]string{"named-0"}),
			"a Ready pod whose Slurm node is unknown was deleted")
		g.Eventually(func(g Gomega) []string {
			list := &eventsv1.EventList{}
			g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Name == "named" && e.Reason == nodeset.ReasonSlurmNodeNotFound && e.Type == corev1.EventTypeWarning {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}).Should(ContainElement(ContainSubstring("named-0")))

		// slurmd registers under the pod's name: drained, idle, deleted, and
		// the condition goes.
		renamed.SetNode(slurm.Node{Name: "named-0", State: []slurm.NodeState{slurm.NodeStateIdle}})
		h.poke(g, "named-0")
		g.Eventually(h.liveNames("named")).Should(BeEmpty())
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "named").Status.Conditions, nodeset.ConditionSlurmNodesFound)
		}).Should(BeNil())
	})

	t.Run("a healthy pod whose Slurm node is gone is replaced, unless a listed node could be it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeController("healer", h.ns).Keys("keys").Obj())).To(Succeed())
		healer := h.clients.add(h.key("healer"))
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("heal", h.ns, "healer").Obj())).To(Succeed())
		g.Eventually(h.liveNames("heal")).Should(Equal([]string{"heal-0"}))
		h.kubelet(g, "heal", healer)
		// Ready long enough ago that only Slurm's node list decides.
		readyLongAgo := func(g Gomega) types.UID {
			p := h.pods(g, "heal")[0]
			patch := client.MergeFrom(p.DeepCopy())
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
			g.Expect(h.c.Status().Patch(h.ctx, &p, patch)).To(Succeed())
			return p.UID
		}
		uid := readyLongAgo(g)
		uidOf := func(g Gomega) types.UID {
			pods := h.pods(g, "heal")
			g.Expect(pods).To(HaveLen(1))
			return pods[0].UID
		}
		h.poke(g, "heal-0")
		g.Consistently(uidOf).WithTimeout(3*time.Second).Should(Equal(uid), "a pod whose node Slurm lists was replaced")

		// An administrator deletes the node, but a node named after the pod
		// with a domain is listed: it could be the pod's slurmd, so the pod stays.
		healer.RemoveNode("heal-0")
		healer.SetNode(slurm.Node{Name: "heal-0.example.org", State: []slurm.NodeState{slurm.NodeStateAllocated}})
		h.poke(g, "heal-0")
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "heal").Status.Conditions, nodeset.ConditionSlurmNodesFound)
		}).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring("pod heal-0"))))
		g.Consistently(uidOf).WithTimeout(3*time.Second).Should(Equal(uid), "a pod that may run jobs under another name was replaced")

		// So could a node with the NodeSet's feature that no pod accounts for.
		healer.RemoveNode("heal-0.example.org")
		healer.SetNode(slurm.Node{Name: "somewhere", Features: []string{"heal"}, State: []slurm.NodeState{slurm.NodeStateAllocated}})
		h.poke(g, "heal-0")
		g.Consistently(uidOf).WithTimeout(3*time.Second).Should(Equal(uid), "a pod that may run jobs under another name was replaced")

		// Nothing Slurm lists can be it: the pod is replaced, and says why.
		healer.RemoveNode("somewhere")
		h.poke(g, "heal-0")
		g.Eventually(uidOf).ShouldNot(Equal(uid))
		g.Eventually(func(g Gomega) []string {
			list := &eventsv1.EventList{}
			g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Name == "heal" && e.Reason == nodeset.ReasonSuccessfulDelete {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}).Should(ContainElement(ContainSubstring("whose slurmd Slurm does not list")))
		g.Eventually(h.typedEventNotes("heal", nodeset.ReasonSlurmNodeNotRegistered)).Should(ContainElement(And(
			HavePrefix("Warning "), ContainSubstring("heal-0"))))
		// The new pod registers and is kept.
		h.kubelet(g, "heal", healer)
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "heal").Status.Conditions, nodeset.ConditionSlurmNodesFound)
		}).Should(BeNil())
	})

	// busy gives each named pod's Slurm node a running job ending after the
	// given time; every other job the fake lists is dropped.
	busy := func(g Gomega, ends map[string]time.Duration) {
		var jobs []slurm.Job
		id := int64(100)
		for name, after := range ends {
			id++
			slurmd.SetNode(slurm.Node{Name: name, State: []slurm.NodeState{slurm.NodeStateAllocated}, AllocCPUs: 1})
			jobs = append(jobs, slurm.Job{JobID: id, Nodes: name, State: []slurm.JobState{slurm.JobStateRunning},
				EndTime: slurm.NewNoVal(time.Now().Add(after).Unix()), TimeLimit: slurm.NewNoVal(int64(after / time.Minute))})
		}
		slurmd.SetJobs(jobs...)
		for name := range ends {
			h.poke(g, name)
			g.Eventually(func(g Gomega) map[string]string {
				pod := &corev1.Pod{}
				g.Expect(h.c.Get(h.ctx, h.key(name), pod)).To(Succeed())
				return pod.Annotations
			}).Should(HaveKey(slinkyv1beta1.AnnotationPodDeadline))
		}
	}
	drained := func(name string) func(Gomega) {
		return func(g Gomega) {
			node, _ := slurmd.Node(name)
			g.Expect(node.IsDrain()).To(BeTrue(), "%s is not drained", name)
			pod := &corev1.Pod{}
			g.Expect(h.c.Get(h.ctx, h.key(name), pod)).To(Succeed())
			g.Expect(pod.Annotations).To(HaveKeyWithValue(slinkyv1beta1.AnnotationPodCordon, "true"))
		}
	}

	t.Run("a scale-in victim whose job runs on returns to service when another pod goes idle", func(t *testing.T) {
		g := NewWithT(t)
		defer slurmd.SetJobs()
		ns := slinkytesting.MakeNodeSet("rerank", h.ns, "slurm").Obj()
		ns.Spec.Replicas = ptr.To[int32](2)
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())
		g.Eventually(h.liveNames("rerank")).Should(HaveLen(2))
		h.kubelet(g, "rerank", slurmd)
		busy(g, map[string]time.Duration{"rerank-0": 3 * time.Hour, "rerank-1": time.Hour})

		// rerank-1's job ends first: it is the one to drain.
		h.updateNodeSet(g, "rerank", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](1) })
		g.Eventually(drained("rerank-1")).Should(Succeed())
		g.Consistently(h.liveNames("rerank")).Should(HaveLen(2), "a pod whose node runs a job must not be deleted")

		// rerank-0's job ends early: losing it now costs nothing, so it goes
		// instead, and rerank-1, whose job still runs, is undrained.
		busy(g, map[string]time.Duration{"rerank-1": time.Hour})
		slurmd.SetNode(slurm.Node{Name: "rerank-0", State: []slurm.NodeState{slurm.NodeStateIdle}})
		h.poke(g, "rerank-0")
		g.Eventually(h.liveNames("rerank")).Should(Equal([]string{"rerank-1"}))
		g.Eventually(func(g Gomega) {
			node, _ := slurmd.Node("rerank-1")
			g.Expect(node.IsDrain()).To(BeFalse(), "the pod kept is still drained: %v", node.State)
			pod := &corev1.Pod{}
			g.Expect(h.c.Get(h.ctx, h.key("rerank-1"), pod)).To(Succeed())
			g.Expect(pod.Annotations[slinkyv1beta1.AnnotationPodCordon]).To(BeEmpty())
		}).Should(Succeed())
	})

	t.Run("a rollout goes on while a scale-in waits for a job", func(t *testing.T) {
		g := NewWithT(t)
		defer slurmd.SetJobs()
		ns := slinkytesting.MakeNodeSet("busyroll", h.ns, "slurm").Obj()
		ns.Spec.Replicas = ptr.To[int32](3)
		ns.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())
		g.Eventually(h.liveNames("busyroll")).Should(HaveLen(3))
		h.kubelet(g, "busyroll", slurmd)
		busy(g, map[string]time.Duration{"busyroll-0": 3 * time.Hour, "busyroll-1": 2 * time.Hour, "busyroll-2": time.Hour})

		h.updateNodeSet(g, "busyroll", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](2) })
		g.Eventually(drained("busyroll-2")).Should(Succeed())
		// A new revision: of the two pods the scale-in keeps, one may be
		// replaced at a time; the one whose job ends first is drained for it.
		h.updateNodeSet(g, "busyroll", func(n *slinkyv1beta1.NodeSet) { n.Spec.Slurmd.Image = "slurmd:next" })
		g.Eventually(drained("busyroll-1")).Should(Succeed())
		g.Consistently(func(g Gomega) map[string]string {
			pod := &corev1.Pod{}
			g.Expect(h.c.Get(h.ctx, h.key("busyroll-0"), pod)).To(Succeed())
			return pod.Annotations
		}).ShouldNot(HaveKey(slinkyv1beta1.AnnotationPodCordon), "maxUnavailable is 1")
		g.Expect(h.liveNames("busyroll")(g)).To(HaveLen(3), "pods whose nodes run jobs must not be deleted")
	})

	t.Run("with slurmrestd down pods are created but none that may run jobs is deleted", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("dark", h.ns, "offline").Obj())).To(Succeed())
		g.Eventually(h.liveNames("dark")).Should(Equal([]string{"dark-0"}))
		h.kubelet(g, "dark", offline)
		offline.SetError(fake.OpListNodes, errors.New("dial tcp: connection refused"))
		h.updateNodeSet(g, "dark", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](2) })
		g.Eventually(h.liveNames("dark")).Should(Equal([]string{"dark-0", "dark-1"}), "pod creation goes on")
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "dark").Status.Conditions, nodeset.ConditionSlurmReachable)
		}).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("connection refused"))))

		h.updateNodeSet(g, "dark", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](0) })
		// dark-1 never ran (no kubelet marked it): it can go. dark-0 runs.
		g.Eventually(h.liveNames("dark")).Should(Equal([]string{"dark-0"}))
		g.Consistently(h.liveNames("dark")).Should(Equal([]string{"dark-0"}))

		offline.SetError(fake.OpListNodes, nil)
		h.poke(g, "dark-0")
		g.Eventually(h.liveNames("dark")).Should(BeEmpty())
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "dark").Status.Conditions, nodeset.ConditionSlurmReachable)
		}).Should(HaveField("Status", metav1.ConditionTrue))
	})
}

var defaultSlurmdImage = slinky.DefaultImages().Slurmd
