//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

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
// the TrainJob lets the garbage collector delete the JobSet (deleted here
// right away; TestTrainJobRunsToCompletion follows a whole life).
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

// expectTrainJobCondition waits for the TrainJob's condition to be True and
// returns it.
func expectTrainJobCondition(t *testing.T, g *WithT, tj *trainerv1alpha1.TrainJob, condType string) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	g.Eventually(func(g Gomega) {
		got := &trainerv1alpha1.TrainJob{}
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(tj), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, condType)
		g.Expect(c).NotTo(BeNil(), "condition %s: %v", condType, got.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "condition %s: %v", condType, got.Status.Conditions)
		cond = *c
	}).Should(Succeed())
	return cond
}

// TestTrainJobRunsToCompletion: the sample TrainJob runs its whole life on
// the real JobSet controller: JobSet → Jobs → Pods that run and succeed
// (kwok's stages) → JobSet Completed → TrainJob Complete. Deleting it
// cascades through the JobSet and Jobs to the Pods.
func TestTrainJobRunsToCompletion(t *testing.T) {
	t.Parallel()
	g := newGomega(t)
	ctx := t.Context()
	ns := newNamespace(t, "trainjob-complete")
	tj := loadSample[trainerv1alpha1.TrainJob](t, trainJobSample)
	tj.Namespace = ns
	createStrict(g, ctx, tj)

	// Both nodes' pods exist and belong to the JobSet's Jobs.
	g.Eventually(func(g Gomega) {
		pods := listPods(g, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name})
		g.Expect(pods).To(HaveLen(int(*tj.Spec.Trainer.NumNodes)))
	}).Should(Succeed())

	complete := expectTrainJobCondition(t, g, tj, trainerv1alpha1.TrainJobComplete)
	t.Logf("TrainJob Complete: %s: %s", complete.Reason, complete.Message)
	js := &jobsetv1alpha2.JobSet{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), js)).To(Succeed())
	g.Expect(conditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted))).To(BeTrue(), "JobSet %v", js.Status.Conditions)
	for _, p := range listPods(g, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}) {
		g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
	}

	g.Expect(k8s.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectGone(g, ctx, &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
		jobs := &batchv1.JobList{}
		g.Expect(k8s.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty(), "Jobs left after the TrainJob was deleted")
		g.Expect(listPods(g, ctx, ns, nil)).To(BeEmpty(), "Pods left after the TrainJob was deleted")
	}).Should(Succeed())
}

// TestTrainJobFailsWhenAPodFails: a trainer pod exiting with code 3 (kwok's
// gantry.dev/kwok-exit-code annotation, set in the runtime's pod template)
// fails its Job, the JobSet and so the TrainJob, with the reason on the
// TrainJob's Failed condition.
func TestTrainJobFailsWhenAPodFails(t *testing.T) {
	t.Parallel()
	g := newGomega(t)
	ctx := t.Context()
	ns := newNamespace(t, "trainjob-fail")

	data, err := os.ReadFile(filepath.Join("..", "..", "config", "runtimes", "torch_distributed.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	shipped := &trainerv1alpha1.ClusterTrainingRuntime{}
	g.Expect(yaml.UnmarshalStrict(data, shipped)).To(Succeed())
	rt := &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "torch-exits-3"},
		Spec:       *shipped.Spec.DeepCopy(),
	}
	node := &rt.Spec.Template.Spec.ReplicatedJobs[0]
	node.Template.Spec.BackoffLimit = ptr.To[int32](0)
	node.Template.Spec.Template.Annotations = map[string]string{"gantry.dev/kwok-exit-code": "3"}
	createStrict(g, ctx, rt)

	tj := &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exits-3"},
		Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{
			Name: rt.Name, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind), APIGroup: ptr.To(trainerv1alpha1.GroupVersion.Group),
		}},
	}
	createStrict(g, ctx, tj)

	failed := expectTrainJobCondition(t, g, tj, trainerv1alpha1.TrainJobFailed)
	t.Logf("TrainJob Failed: %s: %s", failed.Reason, failed.Message)
	g.Expect(failed.Reason).NotTo(BeEmpty())
	g.Expect(failed.Message).NotTo(BeEmpty())
	got := &trainerv1alpha1.TrainJob{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
	g.Expect(conditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobComplete)).To(BeFalse())
	var exitCodes []int32
	for _, p := range listPods(g, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				exitCodes = append(exitCodes, cs.State.Terminated.ExitCode)
			}
		}
	}
	g.Expect(exitCodes).To(ContainElement(int32(3)), "a trainer container exited with 3")
}
