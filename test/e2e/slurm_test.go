//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

const (
	slurmControllerSample = "slinky_v1beta1_controller.yaml"
	slurmNodeSetSample    = "slinky_v1beta1_nodeset.yaml"
	// slurmAuthSecret holds both keys; the sample's comment suggests one
	// Secret per key, which works the same.
	slurmAuthSecret = "slurm-auth"
)

var _ = Describe("Slurm", Label(labelSlurm), func() {
	// A Controller and a NodeSet of two from the samples give a slurmctld
	// StatefulSet and Ready slurmd pods <nodeset>-0 and -1; scaling the
	// NodeSet to zero deletes them. Without a RestApi the operator cannot
	// ask Slurm to drain, so it treats the nodes as drained and deletes at
	// once. The slurmctld pod itself is not asserted here (see "Slurm,
	// moved from Slinky's operator" for one on its state claim).
	It("scales a NodeSet from the samples to two and to zero, with its kubectl columns", func(ctx SpecContext) {
		// slurmd pods become Ready only under kwok: real ones need a slurmctld.
		requireSimulatedKubelet(ctx)
		ns := newNamespace(ctx, "slurm")

		createSlurmAuth(ctx, ns)

		controller := loadSample[slinkyv1beta1.Controller](slurmControllerSample)
		controller.Namespace = ns
		controller.Spec.SlurmKeyRef.Name = slurmAuthSecret
		controller.Spec.JwtKeyRef.Name = slurmAuthSecret
		// The sample mounts extra Slurm config files from these ConfigMaps; the
		// operator stops before the StatefulSet while one is missing.
		for _, ref := range controller.Spec.ConfigFileRefs {
			Expect(k8s.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ref.Name},
				Data:       map[string]string{"cgroup.conf": "CgroupPlugin=disabled\n"},
			})).To(Succeed())
		}
		createStrict(ctx, controller)

		nodeSet := loadSample[slinkyv1beta1.NodeSet](slurmNodeSetSample)
		nodeSet.Namespace = ns
		Expect(nodeSet.Spec.ControllerRef.Name).To(Equal(controller.Name), "the NodeSet sample joins the Controller sample")
		nodeSet.Spec.Replicas = ptr.To[int32](2)
		createStrict(ctx, nodeSet)

		Eventually(ctx, func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.Name + "-controller"}, sts)).To(Succeed())
			expectControlledBy(g, sts, controller)
			g.Expect(sts.Spec.Template.Spec.Containers).To(ContainElement(HaveField("Name", "slurmctld")))
		}).Should(Succeed())

		podNames := []string{nodeSet.Name + "-0", nodeSet.Name + "-1"}
		Eventually(ctx, func(g Gomega) {
			for _, name := range podNames {
				pod := &corev1.Pod{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
				expectScheduledRunningReady(g, pod)
				expectControlledBy(g, pod, nodeSet)
			}
		}).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			got := &slinkyv1beta1.NodeSet{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nodeSet), got)).To(Succeed())
			g.Expect(got.Status.Replicas).To(Equal(int32(2)), "status.replicas")
			g.Expect(got.Status.ReadyReplicas).To(Equal(int32(2)), "status.readyReplicas")
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), "status.observedGeneration")
		}).Should(Succeed())

		// `kubectl get nodeset`: the default columns and their values.
		Eventually(ctx, func(g Gomega) {
			columns := nodeSetTable(g, ctx, nodeSet)
			// The server names its own column "Name"; kubectl upper-cases headers.
			g.Expect(columns).To(HaveKeyWithValue("Name", nodeSet.Name))
			for _, count := range []string{"DESIRED", "REPLICAS", "UPDATED", "READY"} {
				g.Expect(columns).To(HaveKeyWithValue(count, "2"), "column %s", count)
			}
			g.Expect(columns).To(HaveKey("AGE"))
			g.Expect(columns).To(HaveLen(6), "default columns: %v", columns)
		}).Should(Succeed())

		// As `kubectl scale nodeset/slinky --replicas=0` does: the scale subresource.
		scale := &autoscalingv1.Scale{}
		Expect(k8s.SubResource("scale").Get(ctx, nodeSet, scale)).To(Succeed())
		Expect(scale.Spec.Replicas).To(Equal(int32(2)))
		Expect(scale.Status.Replicas).To(Equal(int32(2)))
		scale.Spec.Replicas = 0
		Expect(k8s.SubResource("scale").Update(ctx, nodeSet, client.WithSubResourceBody(scale))).To(Succeed())

		Eventually(ctx, func(g Gomega) {
			for _, name := range podNames {
				expectGone(g, ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			}
			got := &slinkyv1beta1.NodeSet{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nodeSet), got)).To(Succeed())
			g.Expect(got.Status.Replicas).To(BeZero(), "status.replicas")
			g.Expect(got.Status.ReadyReplicas).To(BeZero(), "status.readyReplicas")
		}).Should(Succeed())
		// Zero counts are omitted from the status (as upstream), so kubectl
		// prints empty cells; what matters is that no stale "2" remains.
		Eventually(ctx, func(g Gomega) {
			columns := nodeSetTable(g, ctx, nodeSet)
			for _, count := range []string{"DESIRED", "REPLICAS", "UPDATED", "READY"} {
				g.Expect(columns[count]).To(BeElementOf("", "0"), "column %s after scaling to 0", count)
			}
		}).Should(Succeed())
	})
})

// createSlurmAuth creates the Secret slurmAuthSecret in ns, with a new
// slurm and jwt key.
func createSlurmAuth(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: slurmAuthSecret},
		Data:       map[string][]byte{"slurm.key": randomKey(), "jwt.key": randomKey()},
	})).To(Succeed())
}

func randomKey() []byte {
	GinkgoHelper()
	key := make([]byte, 64)
	_, err := rand.Read(key)
	Expect(err).NotTo(HaveOccurred())
	return key
}

// nodeSetTable fetches the server-side table `kubectl get nodeset` prints
// and returns its default (priority 0) columns by name (as the server spells
// them). An absent value is "", as kubectl shows it.
func nodeSetTable(g Gomega, ctx context.Context, ns *slinkyv1beta1.NodeSet) map[string]string {
	raw, err := clientset.CoreV1().RESTClient().Get().
		AbsPath("/apis", slinkyv1beta1.GroupVersion.Group, slinkyv1beta1.GroupVersion.Version,
			"namespaces", ns.Namespace, "nodesets", ns.Name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	table := &metav1.Table{}
	g.Expect(json.Unmarshal(raw, table)).To(Succeed())
	g.Expect(table.Rows).To(HaveLen(1))
	columns := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		if col.Priority != 0 {
			continue
		}
		cell := table.Rows[0].Cells[i]
		if cell == nil {
			columns[col.Name] = ""
		} else {
			columns[col.Name] = fmt.Sprint(cell)
		}
	}
	return columns
}
