package nodeset_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestNodeSetSshIntegration(t *testing.T) {
	h := startHarness(t)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	g := NewWithT(t)
	h.namespace(g, "slurm-ssh")
	g.Expect(h.c.Create(h.ctx, slinkytesting.MakeController("slurm", h.ns).Keys("keys").Obj())).To(Succeed())
	slurmd := h.clients.add(h.key("slurm"))

	// pod returns the NodeSet's only live pod.
	pod := func(nodeSet string) func(Gomega) corev1.Pod {
		return func(g Gomega) corev1.Pod {
			var live []corev1.Pod
			for _, p := range h.pods(g, nodeSet) {
				if p.DeletionTimestamp == nil {
					live = append(live, p)
				}
			}
			g.Expect(live).To(HaveLen(1))
			return live[0]
		}
	}
	for _, name := range []string{"plain", "cpu"} {
		g.Expect(h.c.Create(h.ctx, slinkytesting.MakeNodeSet(name, h.ns, "slurm").Obj())).To(Succeed())
	}
	g.Eventually(h.liveNames("plain")).Should(Equal([]string{"plain-0"}))
	g.Eventually(h.liveNames("cpu")).Should(Equal([]string{"cpu-0"}))
	h.kubelet(g, "plain", slurmd)
	h.kubelet(g, "cpu", slurmd)
	plain := pod("plain")(g)
	before := pod("cpu")(g)
	g.Expect(before.Spec.Containers[0].Ports).To(HaveLen(1), "no ssh port while ssh is disabled")

	sssdConf := "[sssd]\nservices = nss,pam\n"
	g.Expect(h.c.Create(h.ctx, slinkytesting.MakeSecret("sssd", h.ns, map[string]string{"sssd.conf": sssdConf}).Obj())).To(Succeed())
	ssh := slinkyv1beta1.NodeSetSsh{
		Enabled:         true,
		ExtraSshdConfig: "PermitRootLogin no",
		SssdConfRef:     corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sssd"}, Key: "sssd.conf"},
	}

	t.Run("enabling ssh makes the ssh-config ConfigMap and rolls the pod into one running sshd", func(t *testing.T) {
		g := NewWithT(t)
		h.updateNodeSet(g, "cpu", func(n *slinkyv1beta1.NodeSet) { n.Spec.Ssh = ssh })

		cm := &corev1.ConfigMap{}
		g.Eventually(func() error { return h.c.Get(h.ctx, h.key("cpu-ssh-config"), cm) }).Should(Succeed())
		g.Expect(cm.Data["sshd_config"]).To(And(
			ContainSubstring("UsePAM yes\n"),
			ContainSubstring("Subsystem sftp internal-sftp\n"),
			ContainSubstring("AuthenticationMethods publickey password\n"),
			HaveSuffix("PermitRootLogin no\n")))
		g.Expect(cm.OwnerReferences).To(ContainElement(HaveField("Name", "cpu")))

		var after corev1.Pod
		g.Eventually(func(g Gomega) string {
			after = pod("cpu")(g)
			return after.Labels[slinkyv1beta1.LabelNodeSetRevisionHash]
		}).ShouldNot(Equal(before.Labels[slinkyv1beta1.LabelNodeSetRevisionHash]), "enabling ssh rolls the pod")
		g.Expect(after.UID).NotTo(Equal(before.UID))
		slurmdC := after.Spec.Containers[0]
		g.Expect(slurmdC.Ports).To(ContainElement(And(HaveField("Name", "ssh"), HaveField("ContainerPort", int32(22)))))
		g.Expect(slurmdC.VolumeMounts).To(ContainElements(
			And(HaveField("MountPath", "/etc/ssh/sshd_config"), HaveField("SubPath", "sshd_config")),
			And(HaveField("MountPath", "/etc/sssd/sssd.conf"), HaveField("SubPath", "sssd.conf"))))
		g.Expect(after.Annotations).To(HaveKeyWithValue(nodeset.AnnotationSssdConfHash, slinky.HashBytes([]byte(sssdConf))))
		g.Expect(after.Annotations).To(HaveKeyWithValue(nodeset.AnnotationSshdConfHash, slinky.HashBytes([]byte(cm.Data["sshd_config"]))))
		h.kubelet(g, "cpu", slurmd)
	})

	t.Run("a new sssd.conf rolls the pod", func(t *testing.T) {
		g := NewWithT(t)
		before := pod("cpu")(g)
		secret := &corev1.Secret{}
		g.Expect(h.c.Get(h.ctx, h.key("sssd"), secret)).To(Succeed())
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Data["sssd.conf"] = []byte(sssdConf + "[nss]\n")
		g.Expect(h.c.Patch(h.ctx, secret, patch)).To(Succeed())
		g.Eventually(func(g Gomega) string {
			return pod("cpu")(g).Annotations[nodeset.AnnotationSssdConfHash]
		}).Should(Equal(slinky.HashBytes(secret.Data["sssd.conf"])))
		g.Expect(pod("cpu")(g).UID).NotTo(Equal(before.UID))
		h.kubelet(g, "cpu", slurmd)
	})

	t.Run("a deleted ssh-config ConfigMap is recreated", func(t *testing.T) {
		g := NewWithT(t)
		cm := &corev1.ConfigMap{}
		g.Expect(h.c.Get(h.ctx, h.key("cpu-ssh-config"), cm)).To(Succeed())
		g.Expect(h.c.Delete(h.ctx, cm)).To(Succeed())
		g.Eventually(func(g Gomega) types.UID {
			g.Expect(h.c.Get(h.ctx, h.key("cpu-ssh-config"), cm)).To(Succeed())
			return cm.UID
		}).ShouldNot(BeEmpty())
	})

	t.Run("a NodeSet without ssh keeps its pod and revision hash, whatever its unused spec.ssh holds", func(t *testing.T) {
		g := NewWithT(t)
		disabled := ssh
		disabled.Enabled = false
		h.updateNodeSet(g, "plain", func(n *slinkyv1beta1.NodeSet) { n.Spec.Ssh = disabled })
		g.Consistently(func(g Gomega) corev1.Pod { return pod("plain")(g) }).Should(And(
			HaveField("UID", plain.UID),
			HaveField("ObjectMeta.Labels", HaveKeyWithValue(slinkyv1beta1.LabelNodeSetRevisionHash, plain.Labels[slinkyv1beta1.LabelNodeSetRevisionHash]))))
		g.Expect(h.nodeSet(g, "plain").Status.NodeSetHash).To(Equal(plain.Labels[slinkyv1beta1.LabelNodeSetRevisionHash]))
		g.Expect(h.c.Get(h.ctx, h.key("plain-ssh-config"), &corev1.ConfigMap{})).NotTo(Succeed(), "no ConfigMap without ssh")
	})
}
