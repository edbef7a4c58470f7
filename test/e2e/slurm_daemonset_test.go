//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// A NodeSet in DaemonSet scaling mode against the real slurmctld: one
// slurmd pod per matching Kubernetes node, each registering a real node
// (the stand-in runs its slurmd); a node that stops matching while its
// Slurm node runs a job is drained, its pod kept until the job ends.
//
// Not Serial: the one slurmctld is shared only with "A NodeSet against real
// Slurm", which is Serial and so runs after every parallel spec; the three
// Nodes made here carry a taint that only this NodeSet tolerates, and the
// manager is never restarted. (As Serial it added its 106 s to the suite's
// wall time, alone on one process.)
var _ = Describe("A DaemonSet-mode NodeSet against real Slurm", Label(labelSlurm), Ordered, func() {
	const setName = "ds"
	var (
		slurm *realSlurm
		ns    string
		label string
	)
	kubeNode := func(i int) string { return fmt.Sprintf("%s-%d", ns, i) }
	match := func(ctx context.Context, node string, on bool) {
		GinkgoHelper()
		update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, func(n *corev1.Node) {
			if on {
				n.Labels[label] = "yes"
			} else {
				delete(n.Labels, label)
			}
		})
	}
	// podsByNode maps the Kubernetes node each live pod is bound to, to the pod.
	podsByNode := func(g Gomega, ctx context.Context) map[string]corev1.Pod {
		out := map[string]corev1.Pod{}
		for _, p := range listPods(g, ctx, ns, map[string]string{"app.kubernetes.io/name": "slurmd"}) {
			if p.DeletionTimestamp == nil {
				out[p.Spec.NodeName] = p
			}
		}
		return out
	}
	keys := func(m map[string]corev1.Pod) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}

	BeforeAll(func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		slurm = requireRealSlurm()
		ns = newNamespace(ctx, "slurm-ds")
		label = "gantry.dev/e2e-slurm-ds-" + ns[len(ns)-5:]
		for i := range 3 {
			labels := map[string]string{"gantry.dev/e2e-slurm": ns}
			if i < 2 {
				labels[label] = "yes"
			}
			addKwokNode(ctx, &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: kubeNode(i), Labels: labels},
				Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gantry.dev/e2e-slurm", Value: ns, Effect: corev1.TaintEffectNoSchedule}}},
			})
		}
		slurmKey := make([]byte, 1024)
		_, _ = rand.Read(slurmKey)
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys"},
			Data:       map[string][]byte{"slurm.key": slurmKey, "jwt.key": slurm.jwtKey},
		})).To(Succeed())
		createStrict(ctx, slinkytesting.MakeController("slurm", ns).Keys("keys").Obj())
		rest := slinkytesting.MakeRestApi("slurm", ns, "slurm").Obj()
		rest.Annotations = map[string]string{slinkyv1beta1.AnnotationSlurmrestdURL: slurm.url}
		createStrict(ctx, rest)
		createStrict(ctx, slinkytesting.MakeNodeSet(setName, ns, "slurm").DaemonSet().
			NodeSelector(map[string]string{label: "yes"}).
			Tolerate(corev1.Toleration{Key: "gantry.dev/e2e-slurm", Operator: corev1.TolerationOpEqual, Value: ns}).Obj())
		startSlurmdStandIn(ctx, slurm, ns)
	})

	It("runs one registered slurmd pod on each matching node", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			pods := podsByNode(g, ctx)
			g.Expect(keys(pods)).To(Equal([]string{kubeNode(0), kubeNode(1)}))
			for _, p := range pods {
				expectScheduledRunningReady(g, &p)
				st := slurm.node(g, ctx, nodeset.SlurmNodeName(&p))
				g.Expect(st.idle()).To(BeTrue(), "node %s is %s", nodeset.SlurmNodeName(&p), st.State)
			}
			n := &slinkyv1beta1.NodeSet{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: setName}, n)).To(Succeed())
			g.Expect(n.Status.Desired).To(Equal(int32(2)))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("adds a pod when a node starts to match", func(ctx SpecContext) {
		match(ctx, kubeNode(2), true)
		Eventually(ctx, func(g Gomega) {
			pods := podsByNode(g, ctx)
			g.Expect(keys(pods)).To(Equal([]string{kubeNode(0), kubeNode(1), kubeNode(2)}))
			p := pods[kubeNode(2)]
			expectScheduledRunningReady(g, &p)
			g.Expect(slurm.node(g, ctx, nodeset.SlurmNodeName(&p)).idle()).To(BeTrue())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("drains the Slurm node of a node that stops matching, and deletes its pod only when its job ends", func(ctx SpecContext) {
		var busy corev1.Pod
		Eventually(ctx, func(g Gomega) { busy = podsByNode(g, ctx)[kubeNode(0)] }).Should(Succeed())
		g := Default
		g.Expect(busy.Name).NotTo(BeEmpty())
		slurmName := nodeset.SlurmNodeName(&busy)
		job := slurm.allocate(ctx, slurmName)
		DeferCleanup(func(ctx SpecContext) { _, _ = slurm.run(ctx, "scancel", job) })

		match(ctx, kubeNode(0), false)
		Eventually(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, slurmName)
			expectDrained(g, st, HavePrefix(gantryReason))
		}).Should(Succeed(), "the busy node is drained with Gantry's reason")
		Consistently(ctx, func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: busy.Name}, p)).To(Succeed())
			g.Expect(p.UID).To(Equal(busy.UID))
			g.Expect(p.DeletionTimestamp).To(BeNil(), "the pod of a node running a job is being deleted")
			g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue(), "the job was killed")
		}).WithTimeout(10 * time.Second).Should(Succeed())

		slurm.must(ctx, "scancel", job)
		Eventually(ctx, func(g Gomega) {
			g.Expect(keys(podsByNode(g, ctx))).To(Equal([]string{kubeNode(1), kubeNode(2)}))
			g.Expect(slurm.nodeNames(g, ctx)).NotTo(ContainElement(slurmName),
				"Gantry deletes the record of a node that no longer runs the NodeSet (the preStop keeps it)")
		}).WithTimeout(2*time.Minute).Should(Succeed(), "once the job ended the pod goes, and no pod comes back on that node")
	})
})
