package trainjob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
)

// upstreamRuntimeNames are the ClusterTrainingRuntimes Kubeflow Trainer
// ships; upstream examples reference them by name.
var upstreamRuntimeNames = []string{
	"torch-distributed", "deepspeed-distributed", "mlx-distributed", "mpi-distributed", "jax-distributed", "xgboost-distributed",
	"torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b",
}

// TestShippedRuntimesRunATrainJob loads every runtime in config/runtimes,
// lets the API server validate it, and has the controller turn a small
// TrainJob referencing it into a JobSet the API server accepts.
func TestShippedRuntimesRunATrainJob(t *testing.T) {
	h := startHarness(t)
	ns := h.newNamespace(t)
	dir := filepath.Join(testenv.RepoRoot(), "config", "runtimes")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := gomega.NewWithT(t)
			data, err := os.ReadFile(file)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			ctr := &trainer.ClusterTrainingRuntime{}
			g.Expect(yaml.UnmarshalStrict(data, ctr)).To(gomega.Succeed(), "only one strictly valid ClusterTrainingRuntime per file")
			g.Expect(ctr.Kind).To(gomega.Equal(trainer.ClusterTrainingRuntimeKind))
			g.Expect(ctr.Labels).To(gomega.HaveKey(trainer.LabelRuntimeFramework))
			names = append(names, ctr.Name)
			// Every image is pinned to a tag: an untagged image is :latest,
			// and a job's pods would run whatever was pushed last.
			for _, rj := range ctr.Spec.Template.Spec.ReplicatedJobs {
				pod := rj.Template.Spec.Template.Spec
				for _, c := range append(pod.InitContainers, pod.Containers...) {
					name := c.Image[strings.LastIndex(c.Image, "/")+1:]
					g.Expect(name).To(gomega.MatchRegexp(`^[^:@]+[:@][^:]+$`), "%s: job %s container %s image %q has no tag", ctr.Name, rj.Name, c.Name, c.Image)
					g.Expect(name).NotTo(gomega.HaveSuffix(":latest"), "%s: container %s", ctr.Name, c.Name)
				}
			}
			h.create(t, ctr)
			t.Cleanup(func() {
				_ = h.c.Delete(context.Background(), &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: ctr.Name}})
			})

			job := strings.ReplaceAll(ctr.Name, ".", "-") // a TrainJob name is a DNS label
			h.create(t, newTrainJob(ns, job, ctr.Name).NumNodes(2).Obj())
			h.eventuallyCreated(t, ns, job)
			js := h.eventuallyJobSet(t, ns, job)
			g.Expect(js.Spec.ReplicatedJobs).NotTo(gomega.BeEmpty(), "replicated jobs: %s", jobNames(js))
		})
	}
	gomega.NewWithT(t).Expect(names).To(gomega.ConsistOf(upstreamRuntimeNames))
}
