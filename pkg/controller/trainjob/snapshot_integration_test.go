package trainjob

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// setSuspended sets a TrainJob's spec.suspend and waits until its JobSet
// follows.
func (h *harness) setSuspended(t *testing.T, ns, name string, v bool) {
	t.Helper()
	g := gomega.NewWithT(t)
	g.Eventually(func() error {
		tj := h.trainJob(g, ns, name)
		tj.Spec.Suspend = ptr.To(v)
		return h.c.Update(context.Background(), tj)
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	g.Eventually(func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, name).Spec.Suspend, !v) }).
		WithTimeout(20*time.Second).Should(gomega.Equal(v), "the JobSet's suspend")
}

// editRuntimeImage changes the image of a cluster runtime's first job.
func (h *harness) editRuntimeImage(t *testing.T, name, image string) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func() error {
		rt := &trainer.ClusterTrainingRuntime{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Name: name}, rt); err != nil {
			return err
		}
		rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = image
		return h.c.Update(context.Background(), rt)
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
}

// TestSuspendedJobIsSnapshotWhenCreated: a job created suspended (as Kueue
// queues it) has its runtime snapshot from the start, as Trainer takes it
// at the job's first build; an edit of the runtime while it waits does not
// reach it, suspended or resumed. Taking the snapshot costs neither a
// write nor a read past the cache.
func TestSuspendedJobIsSnapshotWhenCreated(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "queued", rtName).Suspend(true).Obj())
	image := func() string {
		return container(h.eventuallyJobSet(t, ns, "queued"), trainer.TrainerNodeName, trainer.TrainerNodeName).Image
	}

	g.Eventually(func() map[string]string { return h.eventuallyJobSet(t, ns, "queued").Annotations }).
		WithTimeout(10*time.Second).Should(gomega.HaveKeyWithValue(RuntimeSnapshotAnnotation, gomega.ContainSubstring(`"torch:runtime"`)),
		"a job created suspended has its snapshot at once")
	tj := h.eventuallyCreated(t, ns, "queued")
	g.Expect(h.writes.Log()).NotTo(gomega.ContainElement(gomega.And(gomega.HavePrefix(ns+": "), gomega.ContainSubstring("ConfigMap"))),
		"the snapshot is no object of its own")
	// The harness's manager started less than trainerSnapshotSkew ago, so
	// the first build may have looked for Trainer's ConfigMap (a new job
	// after that looks for none: TestNewJobLooksForNoTrainerSnapshot); a
	// job whose JobSet carries the snapshot never looks again.
	reads := h.pastCache.count(ns, &corev1.ConfigMap{})
	g.Expect(reads).To(gomega.BeNumerically("<=", 1))

	h.editRuntimeImage(t, rtName, "torch:edited")
	h.forceReconcile(t, tj)
	g.Expect(image()).To(gomega.Equal("torch:runtime"), "the suspended JobSet is rebuilt from the snapshot")
	g.Expect(h.pastCache.count(ns, &corev1.ConfigMap{})).To(gomega.Equal(reads), "ConfigMaps read past the cache")

	h.setSuspended(t, ns, "queued", false)
	g.Expect(image()).To(gomega.Equal("torch:runtime"), "the job resumes with the runtime it was created with")
	g.Expect(h.eventuallyJobSet(t, ns, "queued").Annotations).To(gomega.HaveKeyWithValue(RuntimeSnapshotAnnotation, gomega.ContainSubstring(`"torch:runtime"`)))
}

// TestJobFromTrainerBuildsFromTrainersSnapshot: a job Trainer started,
// suspended, with its runtime kept in Trainer's <job>-runtime-snapshot
// ConfigMap, is built by Gantry from that snapshot, not from the runtime
// as it is now, and keeps it on its JobSet; resumed, it runs Trainer's
// snapshot.
func TestJobFromTrainerBuildsFromTrainersSnapshot(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeWithImage("torch:live"))

	// Gantry does not get to write a JobSet until the test has played
	// Trainer: its snapshot and its (suspended) JobSet.
	left := h.faults.failJobSetApplies(ns, 1<<30)
	h.create(t, newTrainJob(ns, "moved", rtName).Suspend(true).Obj())
	tj := h.trainJob(g, ns, "moved")
	atTrainer := trainertesting.MakeClusterTrainingRuntime(rtName).Spec(torchRuntimeWithImage("torch:trainer")).Obj()
	h.create(t, trainerSnapshotConfigMap(t, tj, tj.UID, atTrainer), trainersJobSet(tj, "torch:trainer"))
	// As after a switch, the manager's cache knows Trainer's JobSet.
	g.Eventually(func() error {
		return h.seen.cache.Get(context.Background(), client.ObjectKeyFromObject(tj), &jobsetv1alpha2.JobSet{})
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	// A reconcile that loaded before the cache held Trainer's JobSet may
	// still be on its way to the apply, and would build from the live
	// runtime once applies pass. Reconciles of one job run one at a time:
	// after a failed apply seen from here, a second one comes from a
	// reconcile that began after it, with the JobSet cached.
	for range 2 {
		failed := left.Load()
		h.forceReconcile(t, tj)
		g.Eventually(left.Load).WithTimeout(10*time.Second).Should(gomega.BeNumerically("<", failed),
			"an apply fails after the JobSet is cached")
	}
	h.faults.failJobSetApplies(ns, 0)
	h.forceReconcile(t, tj)

	image := func() string {
		return container(h.eventuallyJobSet(t, ns, "moved"), trainer.TrainerNodeName, trainer.TrainerNodeName).Image
	}
	g.Eventually(func() map[string]string { return h.eventuallyJobSet(t, ns, "moved").Annotations }).
		WithTimeout(10*time.Second).Should(gomega.HaveKeyWithValue(RuntimeSnapshotAnnotation, gomega.ContainSubstring(`"torch:trainer"`)),
		"Gantry keeps Trainer's snapshot on the JobSet it rebuilds")
	g.Expect(image()).To(gomega.Equal("torch:trainer"))

	h.setSuspended(t, ns, "moved", false)
	g.Expect(image()).To(gomega.Equal("torch:trainer"), "the job resumes with Trainer's snapshot, not the live runtime")
}

// trainersJobSet is a suspended JobSet as Trainer leaves one for a queued
// job (the part of it the test needs).
func trainersJobSet(tj *trainer.TrainJob, image string) *jobsetv1alpha2.JobSet {
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(tj, trainer.GroupVersion.WithKind(trainer.TrainJobKind))}},
		Spec: jobsetv1alpha2.JobSetSpec{
			Suspend: ptr.To(true),
			ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
				Name: trainer.TrainerNodeName, Replicas: 1,
				Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: trainer.TrainerNodeName, Image: image}},
				}}}},
			}},
		},
	}
}
