package trainjob

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
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
	cacheOpts, err := app.CacheOptions(nil, nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	g.Expect(Integration().SetupWithManager(ctx, mgr, workload.Options{})).To(gomega.Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

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
