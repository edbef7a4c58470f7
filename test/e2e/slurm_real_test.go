//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// gantryReason is the prefix of every drain reason Gantry sets (upstream's,
// so nodes drained by the Slinky operator stay recognisable).
const gantryReason = "slurm-operator: "

// A NodeSet against a real slurmctld and slurmrestd: Gantry reaches
// slurmrestd through the RestApi's endpoint override (the manager runs
// outside the cluster), and each pod kwok runs gets a real slurmd
// (slurmdStandIn), so Slurm's node states and job allocations are real.
// The specs run in order on one NodeSet of five pods, alone (Serial): they
// restart the manager and share the one slurmctld.
var _ = Describe("A NodeSet against real Slurm", Label(labelSlurm), Ordered, Serial, func() {
	const (
		nodeSetName  = "real"
		replicas     = 5
		podMemoryMiB = 512
	)
	var (
		slurm   *realSlurm
		ns      string
		standIn *slurmdStandIn
	)
	podName := func(i int) string { return fmt.Sprintf("%s-%d", nodeSetName, i) }
	getPod := func(g Gomega, ctx context.Context, name string) *corev1.Pod {
		p := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
		return p
	}
	nodeSet := func(g Gomega, ctx context.Context) *slinkyv1beta1.NodeSet {
		n := &slinkyv1beta1.NodeSet{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: nodeSetName}, n)).To(Succeed())
		return n
	}
	scale := func(ctx context.Context, n int32) {
		GinkgoHelper()
		update(ctx, &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nodeSetName}},
			func(s *slinkyv1beta1.NodeSet) { s.Spec.Replicas = ptr.To(n) })
	}
	// poke wakes the NodeSet through one of its pods: Slurm sends no event
	// when a job ends or an administrator acts, and the NodeSet's own Slurm
	// poll is 30 s.
	// A pod already gone needs no poke: its deletion woke the NodeSet (the
	// self-healing can replace a pod before the poke lands).
	poke := func(ctx context.Context, pod string) {
		GinkgoHelper()
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := &corev1.Pod{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod}, p); err != nil {
				return client.IgnoreNotFound(err)
			}
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations["e2e.gantry.dev/poke"] = time.Now().Format(time.RFC3339Nano)
			return client.IgnoreNotFound(k8s.Update(ctx, p))
		})).To(Succeed())
	}
	ourNodes := func(g Gomega, ctx context.Context) []string {
		var out []string
		for _, n := range slurm.nodeNames(g, ctx) {
			if strings.HasPrefix(n, nodeSetName+"-") {
				out = append(out, n)
			}
		}
		return out
	}

	BeforeAll(func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		slurm = requireRealSlurm()
		ns = newNamespace(ctx, "slurm-real")

		// slurmd pods keep one per Kubernetes node; these kwok nodes take
		// the five, and only them (label and taint).
		for i := range replicas {
			addKwokNode(ctx, &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", ns, i), Labels: map[string]string{"gantry.dev/e2e-slurm": ns}},
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
		set := slinkytesting.MakeNodeSet(nodeSetName, ns, "slurm").Obj()
		set.Spec.Replicas = ptr.To[int32](0)
		set.Spec.Template.Spec.NodeSelector = map[string]string{"gantry.dev/e2e-slurm": ns}
		set.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gantry.dev/e2e-slurm", Operator: corev1.TolerationOpEqual, Value: ns}}
		// Smaller than this machine, so a Slurm node sized from the whole
		// host would show.
		set.Spec.Slurmd.Resources.Limits = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("1"),
			corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", podMemoryMiB)),
		}
		createStrict(ctx, set)
		standIn = startSlurmdStandIn(ctx, slurm, ns)
	})

	It("scales 0 to 5: five nodes in sinfo and matching NodeSet counts", func(ctx SpecContext) {
		scale(ctx, replicas)
		Eventually(ctx, func(g Gomega) {
			g.Expect(ourNodes(g, ctx)).To(ConsistOf(podName(0), podName(1), podName(2), podName(3), podName(4)))
			for i := range replicas {
				st := slurm.node(g, ctx, podName(i))
				g.Expect(st.idle()).To(BeTrue(), "node %s is %s", podName(i), st.State)
			}
		}).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			n := nodeSet(g, ctx)
			g.Expect(n.Status).To(And(HaveField("Replicas", int32(replicas)), HaveField("ReadyReplicas", int32(replicas)),
				HaveField("SlurmIdle", int32(replicas)), HaveField("SlurmAllocated", int32(0)), HaveField("SlurmDrain", int32(0))))
			cond := meta.FindStatusCondition(n.Status.Conditions, "SlurmReachable")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
		}).WithTimeout(time.Minute).Should(Succeed(), "the NodeSet polls Slurm every 30 s")
	})

	It("sizes each Slurm node to its pod, not to the host", func(ctx SpecContext) {
		host := slurm.fields(Default, ctx, "slurmd", "-C")
		Expect(host["CPUs"]).To(BeNumerically(">", 1), "this check needs a host with more than one CPU")
		Expect(host["RealMemory"]).To(BeNumerically(">", podMemoryMiB))
		for i := range replicas {
			n := slurm.fields(Default, ctx, "scontrol", "--oneliner", "show", "node", podName(i))
			Expect(n["CPUEfctv"]).To(Equal(1), "node %s: the pod's one CPU, of the host's %d", podName(i), host["CPUs"])
			Expect(n["RealMemory"]-n["MemSpecLimit"]).To(Equal(podMemoryMiB), "node %s: the pod's memory, in MiB", podName(i))
		}
	})

	It("keeps a pod the API server shows Pending whose slurmd registered and runs a job", func(ctx SpecContext) {
		// A sixth pod finds no free Kubernetes node (one slurmd per node)
		// and stays Pending; its slurmd registers anyway, as when the
		// kubelet's report lags behind the container.
		early := podName(replicas)
		scale(ctx, replicas+1)
		Eventually(ctx, func(g Gomega) {
			g.Expect(getPod(g, ctx, early).Status.Phase).To(Equal(corev1.PodPending))
		}).Should(Succeed())
		standIn.registerEarly(ctx, early)
		job := slurm.allocate(ctx, early)
		DeferCleanup(func(ctx SpecContext) { _, _ = slurm.run(ctx, "scancel", job) })
		uid := getPod(Default, ctx, early).UID

		// The Pending pod is the scale-in's first victim; Slurm decides.
		scale(ctx, replicas)
		Eventually(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, early)
			expectDrained(g, st, HavePrefix(gantryReason))
		}).Should(Succeed(), "the scale-in drains the node behind the Pending pod")
		Consistently(ctx, func(g Gomega) {
			p := getPod(g, ctx, early)
			g.Expect(p.UID).To(Equal(uid), "the Pending pod whose node runs a job was deleted")
			g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
			g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue(), "the job was killed")
		}).WithTimeout(10 * time.Second).Should(Succeed())

		slurm.must(ctx, "scancel", job)
		poke(ctx, early)
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: early}})
			g.Expect(ourNodes(g, ctx)).NotTo(ContainElement(early), "the record of a scaled-in ordinal stays")
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("keeps a pod whose slurmd registered under another name, and says so", func(ctx SpecContext) {
		renamed := podName(1)
		alias := renamed + ".e2e.example"
		uid := getPod(Default, ctx, renamed).UID
		standIn.rename(ctx, renamed, alias)
		restored := false
		DeferCleanup(func(ctx SpecContext) {
			if !restored {
				standIn.restore(ctx, renamed, alias)
			}
		})
		poke(ctx, renamed)
		Eventually(ctx, func(g Gomega) {
			cond := meta.FindStatusCondition(nodeSet(g, ctx).Status.Conditions, "SlurmNodesFound")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Message).To(ContainSubstring("pod " + renamed))
		}).Should(Succeed(), "the NodeSet reports a Ready pod whose node Slurm does not list")
		// The pod has been Ready for longer than the grace after which a pod
		// with no node at all is replaced (next spec); this one stays, since
		// a node Slurm lists may be its slurmd.
		Consistently(ctx, func(g Gomega) {
			g.Expect(getPod(g, ctx, renamed).UID).To(Equal(uid))
		}).WithTimeout(10*time.Second).Should(Succeed(), "the pod was replaced while it may run jobs")

		standIn.restore(ctx, renamed, alias)
		restored = true
		poke(ctx, renamed)
		Eventually(ctx, func(g Gomega) {
			g.Expect(getPod(g, ctx, renamed).UID).To(Equal(uid))
			g.Expect(slurm.node(g, ctx, renamed).idle()).To(BeTrue())
			g.Expect(meta.FindStatusCondition(nodeSet(g, ctx).Status.Conditions, "SlurmNodesFound")).To(BeNil())
		}).Should(Succeed(), "slurmd registers under the pod's name again")
	})

	It("replaces a healthy pod whose Slurm node an administrator deleted", func(ctx SpecContext) {
		lost := podName(2)
		uid := getPod(Default, ctx, lost).UID
		slurm.must(ctx, "scontrol", "delete", "nodename="+lost)
		poke(ctx, lost)
		Eventually(ctx, func(g Gomega) {
			p := getPod(g, ctx, lost)
			g.Expect(p.UID).NotTo(Equal(uid), "the pod was not replaced")
			expectScheduledRunningReady(g, p)
			g.Expect(slurm.node(g, ctx, lost).idle()).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed(), "a new pod registers a new node")
	})
	It("issues a Token whose JWT slurmrestd accepts", func(ctx SpecContext) {
		user := envOr("GANTRY_SLURM_USER", "slurm")
		createStrict(ctx, &slinkyv1beta1.Token{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rest"}, Spec: slinkyv1beta1.TokenSpec{
			JwtKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "jwt.key"},
			Username:  user,
		}})
		secret := &corev1.Secret{}
		Eventually(ctx, func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rest-jwt-" + user}, secret)
		}).Should(Succeed())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, slurm.url+"/slurm/v0.0.44/ping/", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X-SLURM-USER-NAME", user)
		req.Header.Set("X-SLURM-USER-TOKEN", string(secret.Data["SLURM_JWT"]))
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		Expect(resp.StatusCode).To(Equal(http.StatusOK), "slurmrestd refused the Token's JWT: %s", body)
	})

	It("drains the Slurm node of a cordoned Kubernetes Node and resumes it on uncordon", func(ctx SpecContext) {
		victim := podName(1)
		kubeNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: getPod(Default, ctx, victim).Spec.NodeName}}
		update(ctx, kubeNode, func(n *corev1.Node) { n.Spec.Unschedulable = true })
		DeferCleanup(func(ctx SpecContext) { update(ctx, kubeNode, func(n *corev1.Node) { n.Spec.Unschedulable = false }) })
		Eventually(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, victim)
			expectDrained(g, st, HavePrefix(gantryReason))
		}).Should(Succeed())

		update(ctx, kubeNode, func(n *corev1.Node) { n.Spec.Unschedulable = false })
		Eventually(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, victim)
			g.Expect(st.idle()).To(BeTrue(), "state %s, reason %q", st.State, st.Reason)
		}).Should(Succeed())
		Expect(getPod(Default, ctx, victim).DeletionTimestamp).To(BeNil(), "a cordon drains the node; it deletes no pod")
	})

	It("never undoes an administrator's drain", func(ctx SpecContext) {
		node := podName(0)
		const reason = "admin: disk check"
		slurm.must(ctx, "scontrol", "update", "NodeName="+node, "State=DRAIN", "Reason="+reason)
		DeferCleanup(func(ctx SpecContext) { slurm.must(ctx, "scontrol", "update", "NodeName="+node, "State=RESUME") })
		poke(ctx, node)
		Eventually(ctx, func(g Gomega) int32 { return nodeSet(g, ctx).Status.SlurmDrain }).
			WithTimeout(time.Minute).Should(Equal(int32(1)), "the NodeSet sees the drain")
		Consistently(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, node)
			expectDrained(g, st, Equal(reason))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("rolls a new slurmd image without taking down a node that runs a job or undoing an administrator's drain", func(ctx SpecContext) {
		busy := podName(2)
		job := slurm.allocate(ctx, busy)
		DeferCleanup(func(ctx SpecContext) { _, _ = slurm.run(ctx, "scancel", job) })
		// An idle node an administrator drained: its pod may be replaced
		// (nothing runs there), but the drain and its reason must outlive
		// the replacement.
		admin := podName(0)
		const adminReason = "admin: firmware check"
		slurm.must(ctx, "scontrol", "update", "NodeName="+admin, "State=DRAIN", "Reason="+adminReason)
		DeferCleanup(func(ctx SpecContext) { slurm.must(ctx, "scontrol", "update", "NodeName="+admin, "State=RESUME") })
		// A job waiting for a node by name: its pod is replaced (nothing
		// runs there) and the job must still be waiting for the new one.
		waiting := strings.TrimSpace(strings.Split(slurm.must(ctx, "sbatch", "--parsable", "--nodelist="+podName(3),
			"--begin=now+1hour", "--wrap=true"), ";")[0])
		DeferCleanup(func(ctx SpecContext) { _, _ = slurm.run(ctx, "scancel", waiting) })
		uids := map[string]types.UID{}
		for i := range replicas {
			uids[podName(i)] = getPod(Default, ctx, podName(i)).UID
		}
		update(ctx, &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nodeSetName}},
			func(s *slinkyv1beta1.NodeSet) { s.Spec.Slurmd.Image = "ghcr.io/slinkyproject/slurmd:e2e-rollout" })

		Eventually(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, busy)
			expectDrained(g, st, HavePrefix(gantryReason))
		}).Should(Succeed(), "the rollout drains the busy node first")
		Consistently(ctx, func(g Gomega) {
			g.Expect(getPod(g, ctx, busy).UID).To(Equal(uids[busy]), "the pod of a node running a job was replaced")
			g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue(), "the job was killed")
		}).WithTimeout(15 * time.Second).Should(Succeed())

		slurm.must(ctx, "scancel", job)
		Eventually(ctx, func(g Gomega) {
			for i := range replicas {
				p := getPod(g, ctx, podName(i))
				g.Expect(p.UID).NotTo(Equal(uids[podName(i)]), "%s was not replaced", p.Name)
				g.Expect(p.Spec.Containers[0].Image).To(Equal("ghcr.io/slinkyproject/slurmd:e2e-rollout"))
			}
			g.Expect(nodeSet(g, ctx).Status).To(And(HaveField("UpdatedReplicas", int32(replicas)), HaveField("ReadyReplicas", int32(replicas))))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(ourNodes(g, ctx)).To(HaveLen(replicas))
			for i := range replicas {
				st := slurm.node(g, ctx, podName(i))
				if podName(i) == admin {
					continue
				}
				g.Expect(st.idle()).To(BeTrue(), "node %s is %s, reason %q", podName(i), st.State, st.Reason)
			}
		}).Should(Succeed(), "every replaced pod's node is back to IDLE")
		Consistently(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, admin)
			g.Expect(st.drain()).To(BeTrue(), "the administrator's drain of %s was lost: %s", admin, st.State)
			g.Expect(st.Reason).To(Equal(adminReason))
		}).WithTimeout(10*time.Second).Should(Succeed(), "the replaced pod's node comes back drained, with the administrator's reason")
		// slurmctld re-reads its configuration: a job naming a node it no
		// longer had would fail now.
		slurm.must(ctx, "scontrol", "reconfigure")
		Consistently(ctx, func(g Gomega) string { return slurm.jobState(g, ctx, waiting) }).WithTimeout(5*time.Second).
			Should(Equal("PENDING"), "the job waiting for %s was ended by the rollout", podName(3))
	})

	It("resumes the node of a busy pod that was deleted, once the pod is back", func(ctx SpecContext) {
		// An eviction, not a scale-in: the pod goes while a job runs, so
		// its preStop cannot delete the node and marks it DOWN instead.
		evicted := podName(4)
		job := slurm.allocate(ctx, evicted)
		DeferCleanup(func(ctx SpecContext) { _, _ = slurm.run(ctx, "scancel", job) })
		old := getPod(Default, ctx, evicted)
		// The returning pod's slurmd waits until the DOWN is seen: its
		// registration may lift it at once (ReturnToService=2).
		standIn.hold(evicted)
		DeferCleanup(func() { standIn.release(evicted) })
		Expect(k8s.Delete(ctx, old)).To(Succeed())
		// Read right after the preStop ran: kwok makes the returning pod
		// Ready at once, and from then on Gantry may resume the node even
		// though its slurmd is held.
		// The preStop sets DRAIN, then DOWN (which ends the job: the pod is
		// going anyway). Under ReturnToService=2 any answer from the node's
		// slurmd lifts a DOWN, at once here; the DRAIN keeps new jobs off.
		Eventually(ctx, func(g Gomega) {
			st, ran := standIn.afterPreStop(evicted)
			g.Expect(ran).To(BeTrue(), "the deleted pod's preStop has not run yet")
			expectDrained(g, st, Equal(gantryReason+"Pod is terminating"))
		}).Should(Succeed(), "the preStop of a pod whose node runs a job takes the node out of service")
		standIn.release(evicted)
		Eventually(ctx, func(g Gomega) {
			p := getPod(g, ctx, evicted)
			g.Expect(p.UID).NotTo(Equal(old.UID))
			expectScheduledRunningReady(g, p)
			st := slurm.node(g, ctx, evicted)
			g.Expect(st.idle()).To(BeTrue(), "node %s is %s, reason %q", evicted, st.State, st.Reason)
		}).WithTimeout(time.Minute).Should(Succeed(), "the pod is back and its node resumed, not left DOWN")

		// This Slurm, like Gantry's slurm.conf, has ReturnToService=2, so
		// slurmctld itself may have resumed the node when the new slurmd
		// registered. Gantry resumes it too, for clusters without that
		// setting: a node DOWN with Gantry's reason behind a Ready pod.
		slurm.must(ctx, "scontrol", "update", "NodeName="+evicted, "State=DOWN", "Reason="+gantryReason+"Pod is terminating")
		poke(ctx, evicted)
		Eventually(ctx, func(g Gomega) {
			// Resumed: no DOWN and no reason. slurmctld may show the node
			// NOT_RESPONDING until its next ping; that is not Gantry's.
			st := slurm.node(g, ctx, evicted)
			g.Expect(st.State).NotTo(ContainSubstring("DOWN"), "reason %q", st.Reason)
			g.Expect(st.drain()).To(BeFalse(), "state %s", st.State)
			g.Expect(st.Reason).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed(), "Gantry resumes a node its preStop left DOWN once the pod is Ready")

		// An administrator's DOWN and DRAIN are theirs to lift: Gantry acts
		// only on its own reason. Whether the DOWN half stays is slurmctld's
		// business (the resumed node is NOT_RESPONDING until the next ping,
		// and with ReturnToService=2 the registration that follows lifts a
		// DOWN), so the check is on what Gantry would undo: the drain and
		// the administrator's reason. DRAIN goes first so no moment leaves
		// the node only DOWN.
		const reason = "admin: PSU replaced"
		slurm.must(ctx, "scontrol", "update", "NodeName="+evicted, "State=DRAIN", "Reason="+reason)
		slurm.must(ctx, "scontrol", "update", "NodeName="+evicted, "State=DOWN", "Reason="+reason)
		DeferCleanup(func(ctx SpecContext) { slurm.must(ctx, "scontrol", "update", "NodeName="+evicted, "State=RESUME") })
		poke(ctx, evicted)
		Consistently(ctx, func(g Gomega) {
			st := slurm.node(g, ctx, evicted)
			expectDrained(g, st, Equal(reason))
		}).WithTimeout(10*time.Second).Should(Succeed(), "Gantry lifted an administrator's DOWN/DRAIN")
	})

	Context("scaling in onto a node that runs a job", func() {
		var job string
		victim := podName(3)
		// The job outlives the first spec; a DeferCleanup there would
		// cancel it when that spec ends.
		AfterAll(func(ctx SpecContext) {
			if job != "" {
				_, _ = slurm.run(ctx, "scancel", job)
			}
		})

		It("drains the node with Gantry's reason and keeps its pod", func(ctx SpecContext) {
			for i := range replicas {
				if podName(i) == victim {
					continue
				}
				update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(i)}}, func(p *corev1.Pod) {
					if p.Annotations == nil {
						p.Annotations = map[string]string{}
					}
					p.Annotations[slinkyv1beta1.AnnotationPodDeletionCost] = "100"
				})
			}
			job = slurm.allocate(ctx, victim)
			uid := getPod(Default, ctx, victim).UID
			scale(ctx, replicas-1)
			Eventually(ctx, func(g Gomega) {
				st := slurm.node(g, ctx, victim)
				expectDrained(g, st, HavePrefix(gantryReason+"Pod ("+ns+"/"+victim+") is pending termination"))
			}).Should(Succeed())
			Consistently(ctx, func(g Gomega) {
				g.Expect(getPod(g, ctx, victim).UID).To(Equal(uid))
				g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue())
			}).WithTimeout(10 * time.Second).Should(Succeed())
		})

		It("keeps the pod when the manager is killed and restarted meanwhile", func(ctx SpecContext) {
			restart := localManagerRestart()
			uid := getPod(Default, ctx, victim).UID
			reachable := func(g Gomega) *metav1.Condition {
				cond := meta.FindStatusCondition(nodeSet(g, ctx).Status.Conditions, "SlurmReachable")
				g.Expect(cond).NotTo(BeNil())
				return cond
			}
			// The restarted manager must reconcile the NodeSet while its Slurm
			// client cannot be had: the JWT key goes from its Secret, so the
			// client stays unknown after the restart until it comes back.
			keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys"}}
			update(ctx, keys, func(s *corev1.Secret) { delete(s.Data, "jwt.key") })
			DeferCleanup(func(ctx SpecContext) {
				update(ctx, keys, func(s *corev1.Secret) { s.Data["jwt.key"] = slurm.jwtKey })
			})
			out, err := restart(ctx)
			Expect(err).NotTo(HaveOccurred(), "restarting the manager: %s", out)
			Eventually(ctx, func(g Gomega) {
				cond := reachable(g)
				g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), cond.Message)
				g.Expect(cond.Message).To(ContainSubstring("not usable"))
			}).Should(Succeed(), "the restarted manager reports Slurm unknown")
			Consistently(ctx, func(g Gomega) {
				g.Expect(getPod(g, ctx, victim).UID).To(Equal(uid))
				g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue())
			}).WithTimeout(20*time.Second).Should(Succeed(), "a pod whose node may run a job is kept while Slurm is unknown")

			update(ctx, keys, func(s *corev1.Secret) { s.Data["jwt.key"] = slurm.jwtKey })
			Eventually(ctx, func(g Gomega) {
				cond := reachable(g)
				g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
			}).WithTimeout(time.Minute).Should(Succeed())
			Expect(getPod(Default, ctx, victim).UID).To(Equal(uid))
		})

		It("keeps the pod while the RestApi is deleted and made again", func(ctx SpecContext) {
			// A Helm rename or a GitOps replace: for a while no RestApi
			// serves the Controller. Slurm's state is unknown, not empty.
			uid := getPod(Default, ctx, victim).UID
			rest := &slinkyv1beta1.RestApi{}
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm"}, rest)).To(Succeed())
			Expect(k8s.Delete(ctx, rest)).To(Succeed())
			recreated := false
			recreate := func(ctx context.Context) {
				again := slinkytesting.MakeRestApi("slurm", ns, "slurm").Obj()
				again.Annotations = map[string]string{slinkyv1beta1.AnnotationSlurmrestdURL: slurm.url}
				Eventually(ctx, func() error { return k8s.Create(ctx, again) }).Should(Succeed())
				recreated = true
			}
			DeferCleanup(func(ctx SpecContext) {
				if !recreated {
					recreate(ctx)
				}
			})
			Eventually(ctx, func(g Gomega) {
				cond := meta.FindStatusCondition(nodeSet(g, ctx).Status.Conditions, "SlurmReachable")
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), cond.Message)
				g.Expect(cond.Reason).To(Equal("SlurmRestApiNotFound"))
			}).Should(Succeed(), "the NodeSet says its RestApi is gone")
			Consistently(ctx, func(g Gomega) {
				g.Expect(getPod(g, ctx, victim).UID).To(Equal(uid))
				g.Expect(slurm.jobRunning(g, ctx, job)).To(BeTrue())
			}).WithTimeout(15*time.Second).Should(Succeed(), "a pod whose node runs a job was deleted once the RestApi was gone")

			recreate(ctx)
			Eventually(ctx, func(g Gomega) {
				cond := meta.FindStatusCondition(nodeSet(g, ctx).Status.Conditions, "SlurmReachable")
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
			}).WithTimeout(time.Minute).Should(Succeed())
			Expect(getPod(Default, ctx, victim).UID).To(Equal(uid))
		})

		It("deletes the pod once the job ends", func(ctx SpecContext) {
			slurm.must(ctx, "scancel", job)
			poke(ctx, victim)
			Eventually(ctx, func(g Gomega) {
				expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim}})
				g.Expect(ourNodes(g, ctx)).NotTo(ContainElement(victim))
				g.Expect(nodeSet(g, ctx).Status.Replicas).To(Equal(int32(replicas - 1)))
			}).WithTimeout(time.Minute).Should(Succeed())
		})
	})

	Context("scaling in onto a suspended job and a node a pending job names", func() {
		var suspended, pending string
		busy, named := podName(4), podName(2)
		AfterAll(func(ctx SpecContext) {
			for _, job := range []string{suspended, pending} {
				if job != "" {
					_, _ = slurm.run(ctx, "scancel", job)
				}
			}
		})
		uids := map[string]types.UID{}
		expectKept := func(g Gomega, ctx context.Context) {
			p := getPod(g, ctx, busy)
			g.Expect(p.UID).To(Equal(uids[busy]), "the pod whose node holds a suspended job was deleted")
			g.Expect(p.Labels).To(HaveKeyWithValue(slinkyv1beta1.LabelNodeSetPodProtect, "true"))
			g.Expect(slurm.jobState(g, ctx, suspended)).To(Equal("SUSPENDED"), "the suspended job was ended")
			g.Expect(slurm.jobState(g, ctx, pending)).To(Equal("PENDING"), "the job waiting for %s was ended", named)
			g.Expect(ourNodes(g, ctx)).To(ContainElement(named), "the record a pending job names was deleted")
		}

		It("keeps the pod of a suspended job's node and the record a pending job names", func(ctx SpecContext) {
			for name, cost := range map[string]string{podName(0): "100", podName(1): "100", named: "0", busy: "0"} {
				update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(p *corev1.Pod) {
					if p.Annotations == nil {
						p.Annotations = map[string]string{}
					}
					p.Annotations[slinkyv1beta1.AnnotationPodDeletionCost] = cost
				})
			}
			suspended = slurm.allocate(ctx, busy)
			slurm.must(ctx, "scontrol", "suspend", suspended)
			Eventually(ctx, func(g Gomega) {
				g.Expect(slurm.jobState(g, ctx, suspended)).To(Equal("SUSPENDED"))
				// Slurm freed the job's CPUs (and this cluster does not
				// count memory): only the job list shows the node is held.
				st := slurm.node(g, ctx, busy)
				g.Expect(st.State).To(HavePrefix("IDLE"), "reason %q", st.Reason)
			}).Should(Succeed())
			out := slurm.must(ctx, "sbatch", "--parsable", "--nodelist="+named, "--begin=now+1hour", "--wrap=true")
			pending = strings.TrimSpace(strings.Split(out, ";")[0])
			uids[busy] = getPod(Default, ctx, busy).UID

			scale(ctx, 2)
			Eventually(ctx, func(g Gomega) {
				expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: named}})
				st := slurm.node(g, ctx, busy)
				expectDrained(g, st, HavePrefix(gantryReason))
			}).WithTimeout(time.Minute).Should(Succeed(), "the idle pod goes; the suspended job's node drains")
			Consistently(ctx, expectKept).WithTimeout(15 * time.Second).Should(Succeed())
		})

		It("keeps them through a reconfigure of slurmctld and a manager restart", func(ctx SpecContext) {
			restart := localManagerRestart()
			// slurmctld fails pending jobs that name a node it no longer has
			// when it re-reads its configuration.
			slurm.must(ctx, "scontrol", "reconfigure")
			out, err := restart(ctx)
			Expect(err).NotTo(HaveOccurred(), "restarting the manager: %s", out)
			Consistently(ctx, expectKept).WithTimeout(20 * time.Second).Should(Succeed())
		})

		It("deletes the pod and both records once the jobs are gone", func(ctx SpecContext) {
			slurm.must(ctx, "scancel", suspended, pending)
			poke(ctx, busy)
			Eventually(ctx, func(g Gomega) {
				expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: busy}})
				g.Expect(ourNodes(g, ctx)).To(ConsistOf(podName(0), podName(1)))
				g.Expect(nodeSet(g, ctx).Status.Replicas).To(Equal(int32(2)))
			}).WithTimeout(time.Minute).Should(Succeed())
		})
	})

	Context("scaling in while two nodes run jobs", func() {
		var jobs []string
		AfterAll(func(ctx SpecContext) {
			for _, job := range jobs {
				_, _ = slurm.run(ctx, "scancel", job)
			}
		})

		It("gives up the drain of a busy node when the other's job ends, and undrains it", func(ctx SpecContext) {
			pods := []string{podName(0), podName(1)}
			jobOf := map[string]string{}
			for _, name := range pods {
				update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(p *corev1.Pod) {
					delete(p.Annotations, slinkyv1beta1.AnnotationPodDeletionCost)
				})
				jobOf[name] = slurm.allocate(ctx, name)
				jobs = append(jobs, jobOf[name])
			}
			uids := map[string]types.UID{}
			for _, name := range pods {
				uids[name] = getPod(Default, ctx, name).UID
			}
			scale(ctx, 1)
			// Both run a job: the one that ends first (or, at the same time,
			// the higher ordinal) is drained and kept.
			var drained, other string
			Eventually(ctx, func(g Gomega) {
				drained, other = "", ""
				for _, name := range pods {
					if slurm.node(g, ctx, name).drain() {
						drained = name
					} else {
						other = name
					}
				}
				g.Expect(drained).NotTo(BeEmpty())
				g.Expect(other).NotTo(BeEmpty())
			}).WithTimeout(time.Minute).Should(Succeed())

			// The other's job ends: its pod is now the one to lose.
			slurm.must(ctx, "scancel", jobOf[other])
			poke(ctx, other)
			Eventually(ctx, func(g Gomega) {
				expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other}})
				st := slurm.node(g, ctx, drained)
				g.Expect(st.drain()).To(BeFalse(), "%s is still drained: %s (%s)", drained, st.State, st.Reason)
				g.Expect(getPod(g, ctx, drained).Annotations).NotTo(HaveKey(slinkyv1beta1.AnnotationPodCordon))
			}).WithTimeout(time.Minute).Should(Succeed(), "the idle pod goes, the busy one returns to service")
			Consistently(ctx, func(g Gomega) {
				g.Expect(getPod(g, ctx, drained).UID).To(Equal(uids[drained]))
				g.Expect(slurm.jobRunning(g, ctx, jobOf[drained])).To(BeTrue())
			}).WithTimeout(10 * time.Second).Should(Succeed())
		})
	})

	It("scales to 0: every pod goes and its node leaves Slurm", func(ctx SpecContext) {
		scale(ctx, 0)
		Eventually(ctx, func(g Gomega) {
			g.Expect(listPods(g, ctx, ns, map[string]string{"app.kubernetes.io/name": "slurmd"})).To(BeEmpty())
			g.Expect(ourNodes(g, ctx)).To(BeEmpty())
			g.Expect(standIn.nodes()).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})

// localManagerRestart returns how to kill -9 and restart the manager of
// `make run`'s control plane (hack/local-cluster.sh restart-manager: the
// process on this machine, or the in-cluster manager's container), or skips
// when the manager under test is not that one (e.g. kind's).
func localManagerRestart() func(context.Context) (string, error) {
	GinkgoHelper()
	if managerLogPath() == "" || os.Getenv("GANTRY_MANAGER_LOG") != "" {
		Skip("restarting the manager needs `make test-e2e`'s local control plane, whose manager runs on this machine")
	}
	// In-cluster (GANTRY_MANAGER=incluster) the script kills the manager's
	// container on the real node and the kubelet restarts it.
	if _, err := os.Stat(filepath.Join(repoRoot, ".run", "manager.pid")); err != nil && os.Getenv("GANTRY_MANAGER") != "incluster" {
		Skip("no .run/manager.pid: the local control plane's manager is not running here")
	}
	script := filepath.Join(repoRoot, "hack", "local-cluster.sh")
	return func(ctx context.Context) (string, error) {
		cmd := exec.CommandContext(ctx, script, "restart-manager")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}
