//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

var _ = Describe("Namespace deletion", Label(labelManager), func() {
	// A namespace holding every namespaced Gantry kind, as the samples make
	// them (a RayCluster with GCS fault tolerance and its cleanup
	// finalizer, a TrainingRuntime and its TrainJob, and the Slurm kinds),
	// is gone within two minutes of its deletion: no finalizer of Gantry's
	// holds it, whether its cleanup can still run or not.
	It("finishes within two minutes with every Gantry kind in it", func(ctx SpecContext) {
		ns := newNamespace(ctx, "nsdelete")
		for _, f := range []string{
			"ray_v1_raycluster_gcs_ft.yaml", "ray_v1_raycluster_minimal.yaml",
			"trainer_v1alpha1_trainingruntime.yaml", "trainer_v1alpha1_trainjob_mpi.yaml",
			"slinky_v1beta1_controller.yaml", "slinky_v1beta1_restapi.yaml", "slinky_v1beta1_nodeset.yaml",
			"slinky_v1beta1_loginset.yaml", "slinky_v1beta1_accounting.yaml", "slinky_v1beta1_token.yaml",
		} {
			out, err := kubectl(ctx, "apply", "-n", ns, "-f", filepath.Join(repoRoot, "config", "samples", f))
			Expect(err).NotTo(HaveOccurred(), "kubectl apply %s: %s", f, out)
		}
		// Gantry is at work on them: the GCS FT finalizer is on, the
		// NodeSet has made its pods.
		Eventually(ctx, func(g Gomega) {
			rc := &rayv1.RayCluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "raycluster-external-redis"}, rc)).To(Succeed())
			g.Expect(slices.Contains(rc.Finalizers, rayv1.GCSFaultToleranceRedisCleanupFinalizer)).To(BeTrue(), "finalizers %v", rc.Finalizers)
			n := &slinkyv1beta1.NodeSet{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slinky"}, n)).To(Succeed())
			g.Expect(n.Status.Replicas).To(BeNumerically(">=", 1), "NodeSet pods")
		}).Should(Succeed())

		start := time.Now()
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "namespace %s still exists", ns)
		AddReportEntry("namespace deletion", time.Since(start).Round(time.Second).String())
	})
})
