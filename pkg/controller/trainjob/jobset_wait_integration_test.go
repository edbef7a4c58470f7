package trainjob

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
)

// TestControllerWaitsForJobSetCRD: on a cluster without JobSet the
// trainjob integration's setup succeeds (the manager keeps running), a
// TrainJob gets a Warning event naming what to install, and once JobSet's
// CRD is installed the controller starts by itself and renders the JobSet.
func TestControllerWaitsForJobSetCRD(t *testing.T) {
	g := gomega.NewWithT(t)
	env := testenv.Start(t, testenv.Options{
		WithoutJobSetCRD: true,
		AddToScheme:      []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme},
	})
	g.Expect(env.HasResource(jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet"))).To(gomega.BeFalse())

	ctx := context.Background()
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := Integration().SetupWithManager(ctx, mgr, workload.Options{MaxConcurrentReconciles: 1}); err != nil {
			return fmt.Errorf("a missing JobSet CRD must not fail the manager's setup: %w", err)
		}
		return nil
	}, Integration()) // its cache trims too: they must not need the CRD either

	c := env.Client
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "runtimes", "torch_distributed.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	rt := &trainer.ClusterTrainingRuntime{}
	g.Expect(yaml.Unmarshal(data, rt)).To(gomega.Succeed())
	g.Expect(c.Create(ctx, rt)).To(gomega.Succeed())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "jobset-wait-"}}
	g.Expect(c.Create(ctx, ns)).To(gomega.Succeed())
	tj := &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "waits", Namespace: ns.Name},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: rt.Name, APIGroup: ptr.To(trainer.GroupVersion.Group), Kind: ptr.To(trainer.ClusterTrainingRuntimeKind)},
		},
	}
	g.Expect(c.Create(ctx, tj)).To(gomega.Succeed())

	g.Eventually(func() []string {
		evs := &eventsv1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns.Name)); err != nil {
			return nil
		}
		var reasons []string
		for _, e := range evs.Items {
			if e.Regarding.Name == tj.Name {
				reasons = append(reasons, e.Reason+": "+e.Note)
			}
		}
		return reasons
	}).WithTimeout(30 * time.Second).Should(gomega.ContainElement(gomega.And(
		gomega.HavePrefix(JobSetNotInstalledReason+": "), gomega.ContainSubstring("jobset.install=true"))))
	g.Consistently(func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(tj), &jobsetv1alpha2.JobSet{})
	}).WithTimeout(time.Second).ShouldNot(gomega.Succeed())

	jobSetCRDs, err := testenv.JobSetCRDDir()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{jobSetCRDs}})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(tj), &jobsetv1alpha2.JobSet{})
	}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).Should(gomega.Succeed(),
		"the trainjob controller should start once JobSet's CRD is served and render the JobSet")
}
