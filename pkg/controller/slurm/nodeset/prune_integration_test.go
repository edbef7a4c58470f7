package nodeset_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/slurm"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestNodeSetPruneSlurmNodeRecordsIntegration(t *testing.T) {
	h := startHarness(t)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	g := NewWithT(t)
	h.namespace(g, "slurm-prune")
	g.Expect(h.c.Create(h.ctx, slinkytesting.MakeController("slurm", h.ns).Keys("keys").Obj())).To(Succeed())
	slurmd := h.clients.add(h.key("slurm"))

	for _, name := range []string{"pn-1", "pn-2", "pn-3"} {
		h.createNode(g, slinkytesting.MakeNode(name).Label("pool", "prune").Obj())
	}
	ns := slinkytesting.MakeNodeSet("pr", h.ns, "slurm").DaemonSet().NodeSelector(map[string]string{"pool": "prune"}).PruneNodeNotFound().Obj()
	g.Expect(h.c.Create(h.ctx, ns)).To(Succeed())
	g.Eventually(h.hostsOf("pr")).Should(HaveLen(3))
	h.daemonKubelet(g, "pr", slurmd)
	// The comment linking each Slurm node to its pod is what pruning reads.
	for _, name := range []string{"pn-1", "pn-2", "pn-3"} {
		g.Eventually(func() string { n, _ := slurmd.Node(name); return n.Comment }).Should(ContainSubstring(`"nodeSetName":"pr"`))
	}

	// loseNode is a Kubernetes node that vanished with its pod; slurmctld
	// marks its slurmd DOWN and NOT_RESPONDING.
	loseNode := func(g Gomega, name string) {
		node, _ := slurmd.Node(name)
		node.State = []slurm.NodeState{slurm.NodeStateDown, slurm.NodeStateNotResponding}
		node.Reason = "Not responding"
		slurmd.SetNode(node)
		pod := h.podOn(g, "pr", name)
		g.Expect(h.c.Delete(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		g.Expect(client.IgnoreNotFound(h.c.Delete(h.ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
	}

	t.Run("a record whose pod and Kubernetes node are gone is deleted, once", func(t *testing.T) {
		g := NewWithT(t)
		loseNode(g, "pn-2")
		g.Eventually(func() bool { _, ok := slurmd.Node("pn-2"); return ok }).Should(BeFalse())
		g.Expect(slurmd.Deleted()).To(Equal([]string{"pn-2"}))
		g.Eventually(h.eventNotes("pr", nodeset.ReasonDefunctSlurmNodePruned)).Should(ConsistOf(
			ContainSubstring("pn-2 (pod ")))
		_, kept := slurmd.Node("pn-1")
		g.Expect(kept).To(BeTrue(), "the record of a live pod is kept")
	})

	t.Run("a record whose node runs a job is kept", func(t *testing.T) {
		g := NewWithT(t)
		slurmd.SetJobs(slurm.Job{JobID: 3, Nodes: "pn-3", State: []slurm.JobState{slurm.JobStateRunning}})
		loseNode(g, "pn-3")
		g.Consistently(func() bool { _, ok := slurmd.Node("pn-3"); return ok }).Should(BeTrue())
		g.Expect(slurmd.Deleted()).To(Equal([]string{"pn-2"}))
	})
}
