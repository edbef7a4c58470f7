package nodeset_test

import (
	"errors"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// boundNode is the node a DaemonSet-mode pod runs on or is bound to by its
// node affinity.
func boundNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, req := range term.MatchFields {
				if req.Key == "metadata.name" && len(req.Values) == 1 {
					return req.Values[0]
				}
			}
		}
	}
	return ""
}

// daemonKubelet plays the scheduler for DaemonSet-mode pods (binds each to
// the node its affinity names), then the kubelet and slurmd (see kubelet).
func (h *harness) daemonKubelet(g Gomega, nodeSet string, f *fake.Client) {
	for _, p := range h.pods(g, nodeSet) {
		if p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
			continue
		}
		g.Expect(boundNode(&p)).NotTo(BeEmpty(), "pod %s is bound to no node", p.Name)
		g.Expect(client.IgnoreNotFound(h.c.SubResource("binding").Create(h.ctx, &p, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: h.ns},
			Target:     corev1.ObjectReference{Kind: "Node", Name: boundNode(&p)},
		}))).To(Succeed())
	}
	h.kubelet(g, nodeSet, f)
}

// reap plays the kubelet for pods being deleted: a pod bound to a node
// stays until its kubelet confirms it stopped.
func (h *harness) reap(g Gomega, nodeSet string) {
	for _, p := range h.pods(g, nodeSet) {
		if p.DeletionTimestamp != nil {
			g.Expect(client.IgnoreNotFound(h.c.Delete(h.ctx, &p, client.GracePeriodSeconds(0)))).To(Succeed())
		}
	}
}

// hostsOf maps the live pods' Slurm node names (their hostnames) to the
// nodes they are bound to.
func (h *harness) hostsOf(nodeSet string) func(Gomega) map[string]string {
	return func(g Gomega) map[string]string {
		out := map[string]string{}
		for _, p := range h.pods(g, nodeSet) {
			if p.DeletionTimestamp == nil {
				g.Expect(out).NotTo(HaveKey(p.Spec.Hostname), "two pods for one node")
				out[p.Spec.Hostname] = boundNode(&p)
			}
		}
		return out
	}
}

// createNode creates a Ready node: the API server taints every new node
// node.kubernetes.io/not-ready (NoSchedule) and, with no node controller
// here, the test lifts it as the node lifecycle controller would.
func (h *harness) createNode(g Gomega, node *corev1.Node) {
	g.Expect(h.c.Create(h.ctx, node)).To(Succeed())
	g.Eventually(func() error {
		n := &corev1.Node{}
		if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(node), n); err != nil {
			return err
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		return h.c.Update(h.ctx, n)
	}).Should(Succeed())
}

func (h *harness) setNodeLabel(g Gomega, node, key, value string) {
	g.Eventually(func() error {
		n := &corev1.Node{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		if value == "" {
			delete(n.Labels, key)
		} else {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[key] = value
		}
		return h.c.Update(h.ctx, n)
	}).Should(Succeed())
}

func (h *harness) eventNotes(nodeSet, reason string) func(Gomega) []string {
	return h.notes(nodeSet, reason, func(e eventsv1.Event) string { return e.Note })
}

// typedEventNotes is eventNotes with each note led by the event's type.
func (h *harness) typedEventNotes(nodeSet, reason string) func(Gomega) []string {
	return h.notes(nodeSet, reason, func(e eventsv1.Event) string { return e.Type + " " + e.Note })
}

// notes lists, as show renders them, the events of the NodeSet with reason.
func (h *harness) notes(nodeSet, reason string, show func(eventsv1.Event) string) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == nodeSet && e.Reason == reason {
				notes = append(notes, show(e))
			}
		}
		return notes
	}
}

func (h *harness) podOn(g Gomega, nodeSet, hostname string) *corev1.Pod {
	for _, p := range h.pods(g, nodeSet) {
		if p.DeletionTimestamp == nil && p.Spec.Hostname == hostname {
			return &p
		}
	}
	g.Expect(hostname).To(BeEmpty(), "no live pod for %s", hostname)
	return nil
}

func TestNodeSetDaemonSetIntegration(t *testing.T) {
	h := startHarness(t)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	g := NewWithT(t)
	h.namespace(g, "slurm-ds")
	for _, name := range []string{"slurm", "offline"} {
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeController(name, h.ns).Keys("keys").Obj())).To(Succeed())
	}
	slurmd := h.clients.add(h.key("slurm"))
	offline := h.clients.add(h.key("offline"))

	t.Run("one pod per matching node, named as Slinky names them", func(t *testing.T) {
		g := NewWithT(t)
		for _, n := range []*corev1.Node{
			slinkytesting.MakeNode("dn-1").Label("pool", "cpu").Obj(),
			slinkytesting.MakeNode("dn-2.example.org").Label("pool", "cpu").Obj(),
			slinkytesting.MakeNode("dn-3").Label("pool", "cpu").Obj(),
			slinkytesting.MakeNode("dn-other").Obj(),
			slinkytesting.MakeNode("dn-tainted").Label("pool", "cpu").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj(),
		} {
			h.createNode(g, n)
		}
		ns := slinkytesting.MakeNodeSet("ds", h.ns, "slurm").DaemonSet().NodeSelector(map[string]string{"pool": "cpu"}).Obj()
		ns.Spec.Replicas = ptr.To[int32](7) // ignored in DaemonSet mode
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())

		want := map[string]string{"dn-1": "dn-1", "dn-2": "dn-2.example.org", "dn-3": "dn-3"}
		g.Eventually(h.hostsOf("ds")).Should(Equal(want))
		g.Consistently(h.hostsOf("ds")).Should(Equal(want), "no pod for the unlabelled or the tainted node")
		for _, p := range h.pods(g, "ds") {
			g.Expect(p.GenerateName).To(Equal("ds-"))
			g.Expect(p.Name).To(MatchRegexp(`^ds-[a-z0-9]{5}$`))
			g.Expect(p.Spec.NodeName).To(BeEmpty(), "the scheduler places the pod")
			g.Expect(p.Labels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetScalingMode, "DaemonSet"))
			g.Expect(p.Labels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetPodName, p.Name))
			g.Expect(p.Labels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetPodHostname, p.Spec.Hostname))
			g.Expect(p.Labels).NotTo(HaveKey(slinkyv1beta1.LabelNodeSetPodIndex))
		}
		g.Eventually(func(g Gomega) slinkyv1beta1.NodeSetStatus { return h.nodeSet(g, "ds").Status }).Should(And(
			HaveField("Desired", int32(3)), HaveField("Replicas", int32(3))))
		g.Eventually(h.eventNotes("ds", nodeset.ReasonSuccessfulCreate)).Should(ContainElement(
			"Created 3 Pods for the Kubernetes nodes dn-1, dn-2.example.org, dn-3"))
		g.Eventually(h.eventNotes("ds", nodeset.ReasonScalingUp)).Should(ContainElement(
			"Created 3 Pods for the Kubernetes nodes dn-1, dn-2.example.org, dn-3"))

		h.daemonKubelet(g, "ds", slurmd)
		g.Eventually(func(g Gomega) slinkyv1beta1.NodeSetStatus { return h.nodeSet(g, "ds").Status }).Should(And(
			HaveField("ReadyReplicas", int32(3)), HaveField("SlurmIdle", int32(3))))
	})

	t.Run("a node that comes to match gets a pod", func(t *testing.T) {
		g := NewWithT(t)
		h.setNodeLabel(g, "dn-other", "pool", "cpu")
		g.Eventually(h.hostsOf("ds")).Should(HaveKeyWithValue("dn-other", "dn-other"))
		h.createNode(g, slinkytesting.MakeNode("dn-new").Label("pool", "cpu").Obj())
		g.Eventually(h.hostsOf("ds")).Should(HaveLen(5))
		g.Expect(h.hostsOf("ds")(g)).To(HaveKeyWithValue("dn-new", "dn-new"))
		g.Eventually(func(g Gomega) int32 { return h.nodeSet(g, "ds").Status.Desired }).Should(Equal(int32(5)))
		h.daemonKubelet(g, "ds", slurmd)
	})

	t.Run("a node that stops matching while a job runs is drained, and its pod deleted only when the job ends", func(t *testing.T) {
		g := NewWithT(t)
		busy := h.podOn(g, "ds", "dn-3")
		slurmd.SetNode(slurm.Node{Name: "dn-3", State: []slurm.NodeState{slurm.NodeStateAllocated}, AllocCPUs: 4})
		slurmd.SetJobs(slurm.Job{JobID: 9, Nodes: "dn-3", State: []slurm.JobState{slurm.JobStateRunning},
			EndTime: slurm.NewNoVal(time.Now().Add(time.Hour).Unix()), TimeLimit: slurm.NewNoVal(120)})
		h.poke(g, busy.Name)

		h.setNodeLabel(g, "dn-3", "pool", "")
		g.Eventually(func() string {
			n, _ := slurmd.Node("dn-3")
			if !n.IsDrain() {
				return ""
			}
			return n.Reason
		}).Should(And(HavePrefix("slurm-operator: "), ContainSubstring(busy.Name), ContainSubstring("dn-3")))
		g.Eventually(func(g Gomega) map[string]string {
			p := &corev1.Pod{}
			g.Expect(h.c.Get(h.ctx, h.key(busy.Name), p)).To(Succeed())
			return p.Annotations
		}).Should(HaveKeyWithValue(slinkyv1beta1.AnnotationPodCordon, "true"))
		g.Consistently(h.liveNames("ds")).Should(ContainElement(busy.Name), "a pod whose node runs a job must not be deleted")
		g.Expect(h.eventNotes("ds", nodeset.ReasonDraining)(g)).To(ContainElement(ContainSubstring(busy.Name)))

		// The job ends: the node is drained and idle, the pod goes, and no
		// pod comes back on the node.
		drained, _ := slurmd.Node("dn-3")
		slurmd.SetJobs()
		slurmd.SetNode(slurm.Node{Name: "dn-3", State: []slurm.NodeState{slurm.NodeStateIdle, slurm.NodeStateDrain}, Reason: drained.Reason})
		h.poke(g, busy.Name)
		g.Eventually(h.liveNames("ds")).ShouldNot(ContainElement(busy.Name))
		g.Consistently(h.hostsOf("ds")).ShouldNot(HaveKey("dn-3"))
		g.Eventually(h.eventNotes("ds", nodeset.ReasonSuccessfulDelete)).Should(ContainElement(
			ContainSubstring("whose Kubernetes node is gone or no longer matches the NodeSet: " + busy.Name)))
		g.Eventually(h.eventNotes("ds", nodeset.ReasonScalingDown)).Should(ContainElement(ContainSubstring(busy.Name)))
		g.Eventually(func(g Gomega) int32 { return h.nodeSet(g, "ds").Status.Desired }).Should(Equal(int32(4)))
	})

	t.Run("a template change rolls the pods one node at a time within maxUnavailable", func(t *testing.T) {
		g := NewWithT(t)
		for _, name := range []string{"rn-1", "rn-2", "rn-3"} {
			h.createNode(g, slinkytesting.MakeNode(name).Label("pool", "roll").Obj())
		}
		ns := slinkytesting.MakeNodeSet("droll", h.ns, "slurm").DaemonSet().NodeSelector(map[string]string{"pool": "roll"}).Obj()
		ns.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())
		g.Eventually(h.hostsOf("droll")).Should(HaveLen(3))
		h.daemonKubelet(g, "droll", slurmd)
		oldHash := h.pods(g, "droll")[0].Labels[slinkyv1beta1.LabelNodeSetRevisionHash]

		h.updateNodeSet(g, "droll", func(n *slinkyv1beta1.NodeSet) { n.Spec.Slurmd.Image = "slurmd:next" })
		byHash := func(g Gomega) (updated, old int) {
			for _, p := range h.pods(g, "droll") {
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
			g.Eventually(func(g Gomega) int {
				h.reap(g, "droll")
				u, _ := byHash(g)
				return u
			}).Should(Equal(step))
			// Until the new pod is ready no other old pod may go.
			g.Consistently(func(g Gomega) int { _, o := byHash(g); return o }).Should(Equal(3 - step))
			h.daemonKubelet(g, "droll", slurmd)
		}
		g.Expect(h.hostsOf("droll")(g)).To(Equal(map[string]string{"rn-1": "rn-1", "rn-2": "rn-2", "rn-3": "rn-3"}))
		for _, p := range h.pods(g, "droll") {
			g.Expect(p.Spec.Containers[0].Image).To(Equal("slurmd:next"))
		}
		// The Slurm nodes Gantry drained for the update are back in service.
		g.Eventually(func() []string {
			var drained []string
			for _, name := range []string{"rn-1", "rn-2", "rn-3"} {
				if n, _ := slurmd.Node(name); n.IsDrain() {
					drained = append(drained, name)
				}
			}
			sort.Strings(drained)
			return drained
		}).Should(BeEmpty())
	})

	t.Run("with slurmrestd down no pod that may run jobs is deleted", func(t *testing.T) {
		g := NewWithT(t)
		h.createNode(g, slinkytesting.MakeNode("on-1").Label("pool", "dark").Obj())
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet("ddark", h.ns, "offline").DaemonSet().
			NodeSelector(map[string]string{"pool": "dark"}).Obj())).To(Succeed())
		g.Eventually(h.hostsOf("ddark")).Should(HaveLen(1))
		h.daemonKubelet(g, "ddark", offline)
		running := h.podOn(g, "ddark", "on-1")
		offline.SetError(fake.OpListNodes, errors.New("dial tcp: connection refused"))
		h.poke(g, running.Name)
		g.Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(h.nodeSet(g, "ddark").Status.Conditions, nodeset.ConditionSlurmReachable)
		}).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse)))

		h.setNodeLabel(g, "on-1", "pool", "")
		g.Eventually(func(g Gomega) int32 { return h.nodeSet(g, "ddark").Status.Desired }).Should(BeZero())
		g.Consistently(h.liveNames("ddark")).Should(Equal([]string{running.Name}),
			"a running pod was deleted while Slurm's state was unknown")

		offline.SetError(fake.OpListNodes, nil)
		h.poke(g, running.Name)
		g.Eventually(h.liveNames("ddark")).Should(BeEmpty())
		node, _ := offline.Node("on-1")
		g.Expect(node.IsDrain()).To(BeTrue(), "the pod was deleted without its Slurm node being drained first")
	})

	t.Run("a NoExecute taint the pod does not tolerate drains it away", func(t *testing.T) {
		g := NewWithT(t)
		victim := h.podOn(g, "ds", "dn-1")
		g.Eventually(func() error {
			n := &corev1.Node{}
			if err := h.c.Get(h.ctx, client.ObjectKey{Name: "dn-1"}, n); err != nil {
				return err
			}
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "evict", Effect: corev1.TaintEffectNoExecute})
			return h.c.Update(h.ctx, n)
		}).Should(Succeed())
		g.Eventually(h.liveNames("ds")).ShouldNot(ContainElement(victim.Name))
		node, _ := slurmd.Node("dn-1")
		g.Expect(node.IsDrain()).To(BeTrue(), "deleted without a drain")
		g.Expect(regexp.MustCompile(`^slurm-operator: `).MatchString(node.Reason)).To(BeTrue())
		g.Consistently(h.hostsOf("ds")).ShouldNot(HaveKey("dn-1"))
	})
}
