package trainjob

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
)

// TestRuntimeInUseFinalizerIsRemoved: runtimes an older Trainer marked with
// its resource-in-use finalizer lose it, as under Trainer v2.3, so they can
// be deleted; other finalizers stay, and JobSet's CRD is not needed for it.
func TestRuntimeInUseFinalizerIsRemoved(t *testing.T) {
	g := gomega.NewWithT(t)
	env := testenv.Start(t, testenv.Options{
		WithoutJobSetCRD: true,
		AddToScheme:      []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme},
	})
	ctx := context.Background()
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		return Integration().SetupWithManager(ctx, mgr, workload.Options{})
	}, Integration())

	const other = "example.com/keep"
	c := env.Client
	ctr := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "old-torch", Finalizers: []string{ResourceInUseFinalizer}}}
	tr := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "old-mpi", Namespace: "default", Finalizers: []string{other, ResourceInUseFinalizer}}}
	for _, obj := range []client.Object{ctr, tr} {
		g.Expect(c.Create(ctx, obj)).To(gomega.Succeed())
	}
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(tr), tr)).To(gomega.Succeed())
		g.Expect(tr.Finalizers).To(gomega.Equal([]string{other}))
	}).WithTimeout(30*time.Second).Should(gomega.Succeed(), "the in-use finalizer goes, the other stays")
	// The ClusterTrainingRuntime can now be deleted.
	g.Expect(c.Delete(ctx, ctr)).To(gomega.Succeed())
	g.Eventually(func() bool {
		err := c.Get(ctx, client.ObjectKeyFromObject(ctr), &trainer.ClusterTrainingRuntime{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}).WithTimeout(30*time.Second).Should(gomega.BeTrue(), "a deleted runtime with the old finalizer goes")

	tr.Finalizers = slices.DeleteFunc(tr.Finalizers, func(f string) bool { return f == other })
	g.Expect(c.Update(ctx, tr)).To(gomega.Succeed())
}
