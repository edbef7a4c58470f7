//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
)

// slurmExample is the README's Slurm cluster on the real node: Controller,
// RestApi and a NodeSet of two slurmd pods from the local Slurm images.
const slurmExample = "docs/examples/realnode-slurm.yaml"

// Slurm in real containers: slurmctld runs on the configuration Gantry
// generates, the slurmd pods fetch it from slurmctld (configless) and
// register as dynamic nodes, jobs run in the slurmd containers, and the
// kubelet runs Gantry's probes and the slurmd container's preStop. The
// manager, outside the cluster, reaches slurmrestd at its pod's address
// (the RestApi's URL override). The specs run in order on one cluster,
// alone (Serial): the real node has two CPUs.
var _ = Describe("Slurm in containers on the real node", Label(labelSlurm, labelReal), Ordered, Serial, func() {
	const (
		nodeSetName = "real"
		controller  = "slurm-controller-0"
		partition   = "real"
		// The example's slurmd memory limit in MiB.
		podMemoryMiB = 256
		// The NodeSet's second image (hack/test-images.sh): the first one
		// again, with GANTRY_IMAGE_REVISION=2.
		nextSlurmdImage = "gantry.local/slurmd:26.05-debian-sid-r2"
	)
	var (
		ns    string
		slurm *realSlurm
	)
	podName := func(i int) string { return fmt.Sprintf("%s-%d", nodeSetName, i) }
	getPod := func(g Gomega, ctx context.Context, name string) *corev1.Pod {
		p := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
		return p
	}
	ready := func(g Gomega, ctx context.Context, name string) *corev1.Pod {
		p := getPod(g, ctx, name)
		g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s is terminating", name)
		g.Expect(podConditionTrue(p, corev1.PodReady)).To(BeTrue(), "pod %s is not Ready: %s", name, podState(p))
		return p
	}
	// sbatch submits a batch job and returns its id.
	sbatch := func(ctx context.Context, args ...string) string {
		GinkgoHelper()
		out := slurm.must(ctx, append([]string{"sbatch", "--parsable", "--partition=" + partition}, args...)...)
		return strings.TrimSpace(strings.Split(out, ";")[0])
	}
	// inSlurmd runs a command in a slurmd container.
	inSlurmd := func(ctx context.Context, pod string, args ...string) (string, error) {
		return kubectl(ctx, append([]string{"-n", ns, "exec", pod, "-c", "slurmd", "--"}, args...)...)
	}

	BeforeAll(func(ctx SpecContext) {
		requireRealNode(ctx)
		ns = newNamespace(ctx, "slurm-real-node")
		out, err := kubectl(ctx, "-n", ns, "apply", "-f", filepath.Join(repoRoot, slurmExample))
		Expect(err).NotTo(HaveOccurred(), out)
		slurm = &realSlurm{execIn: ns + "/" + controller + "/slurmctld"}

		// The manager runs on this machine, outside the cluster network:
		// it reaches slurmrestd at its pod's address.
		var rest corev1.Pod
		Eventually(ctx, func(g Gomega) {
			pods := listPods(g, ctx, ns, map[string]string{"app.kubernetes.io/name": "slurmrestd"})
			g.Expect(pods).To(HaveLen(1))
			rest = pods[0]
			g.Expect(rest.Status.PodIP).NotTo(BeEmpty())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		update(ctx, &slinkyv1beta1.RestApi{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slurm"}}, func(r *slinkyv1beta1.RestApi) {
			if r.Annotations == nil {
				r.Annotations = map[string]string{}
			}
			r.Annotations[slinkyv1beta1.AnnotationSlurmrestdURL] = fmt.Sprintf("http://%s:6820", rest.Status.PodIP)
		})
	})

	It("starts slurmctld on Gantry's configuration and two slurmd pods that register configless, sized to their pods", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			for _, p := range []string{controller, podName(0), podName(1)} {
				g.Expect(ready(g, ctx, p).Spec.NodeName).To(HavePrefix("real-"))
			}
			g.Expect(listPods(g, ctx, ns, map[string]string{"app.kubernetes.io/name": "slurmrestd"})).To(
				ContainElement(WithTransform(func(p corev1.Pod) bool { return podConditionTrue(&p, corev1.PodReady) }, BeTrue())))
		}).WithTimeout(3*time.Minute).Should(Succeed(), "the kubelet runs the pods and their probes pass")

		Eventually(ctx, func(g Gomega) {
			g.Expect(slurm.nodeNames(g, ctx)).To(ConsistOf(podName(0), podName(1)))
			for i := range 2 {
				g.Expect(slurm.node(g, ctx, podName(i)).idle()).To(BeTrue())
			}
		}).WithTimeout(2*time.Minute).Should(Succeed(), "sinfo lists both pods' nodes, idle")

		// The slurmd container holds only the key: its configuration came
		// from slurmctld.
		out, err := inSlurmd(ctx, podName(0), "ls", "/etc/slurm")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.Fields(out)).To(Equal([]string{"slurm.key"}))

		for i := range 2 {
			out := slurm.must(ctx, "scontrol", "--oneliner", "show", "node", podName(i))
			f := numericFields(out)
			Expect(out).To(ContainSubstring("ActiveFeatures=" + nodeSetName))
			Expect(out).To(ContainSubstring("Partitions=" + partition))
			// 500m of CPU is one CPU to Slurm; the host's others are
			// reserved (CoreSpecCount), and so is its memory beyond the
			// pod's limit (MemSpecLimit).
			Expect(f).To(HaveKey("CPUTot"))
			if f["CPUTot"] > 1 {
				Expect(f).To(HaveKeyWithValue("CoreSpecCount", f["CPUTot"]-1), out)
			}
			Expect(f).To(HaveKeyWithValue("MemSpecLimit", f["RealMemory"]-podMemoryMiB), out)
		}
	})

	It("runs srun across both slurmd pods and a batch job in one of them", func(ctx SpecContext) {
		out := slurm.must(ctx, "srun", "--partition="+partition, "--nodes=2", "hostname")
		hosts := strings.Fields(out)
		slices.Sort(hosts)
		Expect(hosts).To(Equal([]string{podName(0), podName(1)}))

		job := sbatch(ctx, "--nodelist="+podName(1), "--output=/tmp/batch-%j.out", `--wrap=echo "batch job $SLURM_JOB_ID on $(hostname)"`)
		Eventually(ctx, func(g Gomega) string {
			return slurm.must(ctx, "scontrol", "--oneliner", "show", "job", job)
		}).WithTimeout(time.Minute).Should(ContainSubstring("JobState=COMPLETED"))
		out, err := inSlurmd(ctx, podName(1), "cat", "/tmp/batch-"+job+".out")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(Equal(fmt.Sprintf("batch job %s on %s\n", job, podName(1))))
	})

	// A deleted pod: the kubelet runs the slurmd container's preStop, which
	// drains and downs the node with Gantry's reason before slurmd stops;
	// the pod that replaces it registers onto the same node, and Gantry
	// lifts the reason once it is Ready.
	It("runs the preStop in the slurmd container when a pod is deleted, and the replacement takes the node back", func(ctx SpecContext) {
		old := getPod(Default, ctx, podName(0))
		Expect(k8s.Delete(ctx, old)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			logs, err := kubectl(ctx, "-n", ns, "logs", controller, "-c", "slurmctld")
			g.Expect(err).NotTo(HaveOccurred(), logs)
			g.Expect(logs).To(MatchRegexp(`node %s reason set to: %s`, podName(0), nodeset.PreStopReason))
		}).WithTimeout(time.Minute).Should(Succeed(), "slurmctld logged the preStop's update of %s", podName(0))
		Eventually(ctx, func(g Gomega) {
			g.Expect(ready(g, ctx, podName(0)).UID).NotTo(Equal(old.UID))
			st := slurm.node(g, ctx, podName(0))
			g.Expect(st.idle()).To(BeTrue(), "node %s is %s, reason %q", podName(0), st.State, st.Reason)
		}).WithTimeout(3*time.Minute).Should(Succeed(), "the new pod's slurmd took the node back")
	})

	It("rolls a new slurmd image while a job runs: the busy pod is drained and kept until the job ends", func(ctx SpecContext) {
		busy, idle := podName(1), podName(0)
		job := sbatch(ctx, "--nodelist="+busy, "--wrap=sleep 600")
		DeferCleanup(func(ctx SpecContext) { _, _ = slurm.run(ctx, "scancel", job) })
		Eventually(ctx, func(g Gomega) bool { return slurm.jobRunning(g, ctx, job) }).WithTimeout(time.Minute).Should(BeTrue())
		uids := map[string]types.UID{}
		for _, p := range []string{busy, idle} {
			uids[p] = getPod(Default, ctx, p).UID
		}

		update(ctx, &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nodeSetName}},
			func(s *slinkyv1beta1.NodeSet) { s.Spec.Slurmd.Image = nextSlurmdImage })

		Eventually(ctx, func(g Gomega) {
			p := ready(g, ctx, idle)
			g.Expect(p.UID).NotTo(Equal(uids[idle]))
			g.Expect(p.Spec.Containers[0].Image).To(Equal(nextSlurmdImage))
			g.Expect(slurm.node(g, ctx, idle).idle()).To(BeTrue())
		}).WithTimeout(3*time.Minute).Should(Succeed(), "the idle pod is replaced by one of the new image, and its node is back")
		out, err := inSlurmd(ctx, idle, "printenv", "GANTRY_IMAGE_REVISION")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.TrimSpace(out)).To(Equal("2"), "the new pod runs the new image")

		Eventually(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, busy)
			expectDrained(g, st, HavePrefix(gantryReason))
		}).Should(Succeed(), "the rollout drains the busy node")
		Consistently(ctx, func(g Gomega) {
			g.Expect(getPod(g, ctx, busy).UID).To(Equal(uids[busy]), "the pod of a node running a job was replaced")
			g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue(), "the job was killed")
		}).WithTimeout(15 * time.Second).Should(Succeed())
		// The job's process runs in the busy pod's container.
		out, err = inSlurmd(ctx, busy, "pgrep", "-x", "sleep")
		Expect(err).NotTo(HaveOccurred(), "no job process in %s: %s", busy, out)

		slurm.must(ctx, "scancel", job)
		Eventually(ctx, func(g Gomega) {
			p := ready(g, ctx, busy)
			g.Expect(p.UID).NotTo(Equal(uids[busy]))
			g.Expect(p.Spec.Containers[0].Image).To(Equal(nextSlurmdImage))
			st := slurm.node(g, ctx, busy)
			g.Expect(st.idle()).To(BeTrue(), "node %s is %s, reason %q", busy, st.State, st.Reason)
		}).WithTimeout(3*time.Minute).Should(Succeed(), "once the job ends the busy pod is replaced and its node is back")
	})

	It("drains the node of a scale-in victim that runs a job, keeps the pod until the job ends, then deletes it and its node", func(ctx SpecContext) {
		victim, kept := podName(1), podName(0)
		// Gantry, like Slinky, scales in idle nodes first; a higher
		// deletion cost on the other pod makes the busy one the victim.
		update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kept}}, func(p *corev1.Pod) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[slinkyv1beta1.AnnotationPodDeletionCost] = "100"
		})
		job := sbatch(ctx, "--nodelist="+victim, "--wrap=sleep 600")
		DeferCleanup(func(ctx SpecContext) { _, _ = slurm.run(ctx, "scancel", job) })
		Eventually(ctx, func(g Gomega) bool { return slurm.jobRunning(g, ctx, job) }).WithTimeout(time.Minute).Should(BeTrue())
		uid := getPod(Default, ctx, victim).UID

		update(ctx, &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nodeSetName}},
			func(s *slinkyv1beta1.NodeSet) { s.Spec.Replicas = ptr.To[int32](1) })
		Eventually(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, victim)
			expectDrained(g, st, HavePrefix(gantryReason))
		}).Should(Succeed(), "the victim's node is drained with Gantry's reason")
		Consistently(ctx, func(g Gomega) {
			p := getPod(g, ctx, victim)
			g.Expect(p.UID).To(Equal(uid))
			g.Expect(p.DeletionTimestamp).To(BeNil(), "the pod of a node running a job is being deleted")
			g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue(), "the job was killed")
		}).WithTimeout(15 * time.Second).Should(Succeed())

		slurm.must(ctx, "scancel", job)
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: victim}, &corev1.Pod{})
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			g.Expect(err).To(HaveOccurred(), "pod %s still exists", victim)
			g.Expect(slurm.nodeNames(g, ctx)).To(ConsistOf(kept))
		}).WithTimeout(2*time.Minute).Should(Succeed(), "once the job ends the pod goes, and so does its node")
	})
})
