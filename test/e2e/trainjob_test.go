//go:build e2e

package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

const (
	trainJobSample = "trainer_v1alpha1_trainjob.yaml"
	// torchRuntime is the shipped ClusterTrainingRuntime the sample names;
	// its JobSet has one replicated job "node" with a container "node".
	torchRuntime = "torch-distributed"
	trainerJob   = "node"
)

// TestTrainJobOnShippedRuntime: the sample TrainJob on the shipped
// torch-distributed runtime becomes a JobSet the TrainJob controls; deleting
// the TrainJob lets the garbage collector delete the JobSet. No JobSet
// controller runs, so the test stops at the JobSet.
func TestTrainJobOnShippedRuntime(t *testing.T) {
	t.Parallel()
	g := newGomega(t)
	ctx := t.Context()
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: torchRuntime}, &trainerv1alpha1.ClusterTrainingRuntime{})).
		To(Succeed(), "the shipped runtimes (config/runtimes) must be installed")
	ns := newNamespace(t, "trainjob")

	tj := loadSample[trainerv1alpha1.TrainJob](t, trainJobSample)
	tj.Namespace = ns
	createStrict(g, ctx, tj)

	jobSet := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(jobSet), jobSet)).To(Succeed())
		expectControlledBy(g, jobSet, tj)
	}).Should(Succeed())

	// The TrainJob's trainer settings reach the JobSet the runtime renders.
	var node *jobsetv1alpha2.ReplicatedJob
	for i := range jobSet.Spec.ReplicatedJobs {
		if jobSet.Spec.ReplicatedJobs[i].Name == trainerJob {
			node = &jobSet.Spec.ReplicatedJobs[i]
		}
	}
	g.Expect(node).NotTo(BeNil(), "replicated job %q in JobSet %s", trainerJob, jobSet.Name)
	g.Expect(node.Template.Spec.Parallelism).To(HaveValue(Equal(*tj.Spec.Trainer.NumNodes)), "parallelism = numNodes")
	g.Expect(node.Template.Spec.Template.Spec.Containers).To(ContainElement(And(
		HaveField("Name", trainerJob),
		HaveField("Image", *tj.Spec.Trainer.Image),
		HaveField("Command", tj.Spec.Trainer.Command),
	)), "the trainer container carries the TrainJob's image and command")

	g.Eventually(func(g Gomega) {
		got := &trainerv1alpha1.TrainJob{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
		g.Expect(conditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobCreated)).To(BeTrue(),
			"condition %s: %v", trainerv1alpha1.TrainJobCreated, got.Status.Conditions)
	}).Should(Succeed())

	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), tj)).To(Succeed())
	g.Expect(tj.Finalizers).To(BeEmpty(), "the JobSet's deletion below is the garbage collector's only without a finalizer")
	g.Expect(k8s.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectGone(g, ctx, &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
		expectGone(g, ctx, &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobSet.Name}})
	}).Should(Succeed())
}
