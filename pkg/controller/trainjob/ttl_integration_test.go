package trainjob

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// deletedOrDeleting: the TrainJob is gone, or its deletion has begun. The
// test control plane runs no garbage collector, so a foreground deletion
// stays at its second half: deletionTimestamp set, the foregroundDeletion
// finalizer waiting for the JobSet to go.
func (h *harness) deletedOrDeleting(g gomega.Gomega, ns, name string) bool {
	tj := &trainer.TrainJob{}
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tj)
	if apierrors.IsNotFound(err) {
		return true
	}
	g.Expect(err).NotTo(gomega.HaveOccurred())
	if tj.DeletionTimestamp.IsZero() {
		return false
	}
	g.Expect(tj.Finalizers).To(gomega.ContainElement(metav1.FinalizerDeleteDependents), "not a foreground deletion")
	return true
}

func completeJobSet(s *jobsetv1alpha2.JobSetStatus) {
	s.ReplicatedJobsStatus = []jobsetv1alpha2.ReplicatedJobStatus{{Name: trainer.TrainerNodeName, Succeeded: 1}}
	s.Conditions = append(s.Conditions, metav1.Condition{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue,
		Reason: "AllJobsCompleted", Message: "jobset completed successfully", LastTransitionTime: metav1.Now()})
}

// TestTTLDeletesFinishedJobsOnly: a finished TrainJob is deleted
// ttlSecondsAfterFinished after it finished, whether the TTL is its own or
// its runtime's runPolicy default, with a TTLExpired event; a running job
// and a suspended (queued) one with a TTL of zero stay.
func TestTTLDeletesFinishedJobsOnly(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	spec := torchRuntimeSpec()
	spec.RunPolicy = &trainer.RunPolicy{TTLSecondsAfterFinished: ptr.To[int32](2)}
	rtName := h.clusterRuntime(t, ns, "torch", spec)

	own := newTrainJob(ns, "own-ttl", rtName).Obj()
	own.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	running := newTrainJob(ns, "running", rtName).Obj()
	running.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
	queued := newTrainJob(ns, "queued", rtName).Suspend(true).Obj()
	queued.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
	h.create(t, own, running, queued, newTrainJob(ns, "runtime-ttl", rtName).Obj())
	for _, name := range []string{"own-ttl", "runtime-ttl", "running", "queued"} {
		h.eventuallyJobSet(t, ns, name)
	}

	for _, name := range []string{"own-ttl", "runtime-ttl"} {
		h.setJobSetStatus(t, ns, name, completeJobSet)
		h.eventuallyCondition(t, ns, name, trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted")
	}
	for _, name := range []string{"own-ttl", "runtime-ttl"} {
		g.Eventually(func(g gomega.Gomega) bool { return h.deletedOrDeleting(g, ns, name) }).
			WithTimeout(20*time.Second).Should(gomega.BeTrue(), "%s was not deleted after its TTL", name)
		g.Eventually(func(g gomega.Gomega) []string { return h.eventReasons(g, ns, name) }).
			WithTimeout(10*time.Second).Should(gomega.ContainElement(ReasonTTLExpired), "%s", name)
	}
	g.Consistently(func(g gomega.Gomega) {
		for _, name := range []string{"running", "queued"} {
			g.Expect(h.deletedOrDeleting(g, ns, name)).To(gomega.BeFalse(), "%s, not finished, was deleted", name)
		}
	}).WithTimeout(3 * time.Second).Should(gomega.Succeed())
	g.Expect(counterValue(t, h.reg, "gantry_trainjob_ttl_deleted_total", map[string]string{"namespace": ns})).To(gomega.Equal(2.0))
}

// TestTTLIsMutable: a finished job whose TTL is long is deleted once the
// TTL is shortened (the field is mutable, as on a Job).
func TestTTLIsMutable(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	tj := newTrainJob(ns, "kept", rtName).Obj()
	tj.Spec.TTLSecondsAfterFinished = ptr.To[int32](3600)
	h.create(t, tj)
	h.eventuallyJobSet(t, ns, "kept")
	h.setJobSetStatus(t, ns, "kept", completeJobSet)
	h.eventuallyCondition(t, ns, "kept", trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted")
	g.Expect(h.deletedOrDeleting(g, ns, "kept")).To(gomega.BeFalse())

	g.Eventually(func() error {
		tj := h.trainJob(g, ns, "kept")
		tj.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
		return h.c.Update(context.Background(), tj)
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) bool { return h.deletedOrDeleting(g, ns, "kept") }).
		WithTimeout(20 * time.Second).Should(gomega.BeTrue())
}

// TestRuntimeDeadlineIsTheDefault: the runtime's runPolicy
// activeDeadlineSeconds fails a job that sets none; a job's own deadline
// overrides it.
func TestRuntimeDeadlineIsTheDefault(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	spec := torchRuntimeSpec()
	spec.RunPolicy = &trainer.RunPolicy{ActiveDeadlineSeconds: ptr.To[int64](2)}
	rtName := h.clusterRuntime(t, ns, "torch", spec)
	longer := newTrainJob(ns, "longer", rtName).Obj()
	longer.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
	h.create(t, newTrainJob(ns, "bounded", rtName).Obj(), longer)
	h.eventuallyJobSet(t, ns, "longer")

	h.eventuallyCondition(t, ns, "bounded", trainer.TrainJobFailed, metav1.ConditionTrue, trainer.TrainJobDeadlineExceededReason)
	g.Eventually(func() bool {
		err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bounded"}, &jobsetv1alpha2.JobSet{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(10 * time.Second).Should(gomega.BeTrue())
	g.Expect(trainer.IsFinished(h.trainJob(g, ns, "longer").Status.Conditions)).To(gomega.BeFalse())
}

// TestStartAndCompletionTimes: startTime is the job's creation for a job
// created running (written with its first counts), none while it waits
// suspended, its resume once resumed; completionTime is the Complete
// condition's time.
func TestStartAndCompletionTimes(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "run", rtName).Obj(), newTrainJob(ns, "queued", rtName).Suspend(true).Obj())
	h.eventuallyJobSet(t, ns, "run")

	h.setJobSetStatus(t, ns, "run", func(s *jobsetv1alpha2.JobSetStatus) {
		s.ReplicatedJobsStatus = []jobsetv1alpha2.ReplicatedJobStatus{{Name: trainer.TrainerNodeName, Active: 1}}
	})
	g.Eventually(func(g gomega.Gomega) {
		tj := h.trainJob(g, ns, "run")
		g.Expect(tj.Status.StartTime).NotTo(gomega.BeNil())
		g.Expect(tj.Status.StartTime.Equal(&tj.CreationTimestamp)).To(gomega.BeTrue(), "startTime %v, created %v", tj.Status.StartTime, tj.CreationTimestamp)
		g.Expect(tj.Status.CompletionTime).To(gomega.BeNil())
	}).WithTimeout(20 * time.Second).Should(gomega.Succeed())

	h.setJobSetStatus(t, ns, "run", completeJobSet)
	tj := h.eventuallyCondition(t, ns, "run", trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted")
	g.Expect(tj.Status.CompletionTime).NotTo(gomega.BeNil())
	done := meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobComplete).LastTransitionTime
	g.Expect(tj.Status.CompletionTime.Equal(&done)).To(gomega.BeTrue(), "completionTime %v, Complete at %v", tj.Status.CompletionTime, done)

	h.eventuallyCondition(t, ns, "queued", trainer.TrainJobSuspended, metav1.ConditionTrue, trainer.TrainJobSuspendedReason)
	g.Expect(h.trainJob(g, ns, "queued").Status.StartTime).To(gomega.BeNil(), "a job created suspended has not started")
	time.Sleep(1100 * time.Millisecond) // the resume is a later second than the creation
	g.Eventually(func() error {
		tj := h.trainJob(g, ns, "queued")
		tj.Spec.Suspend = ptr.To(false)
		return h.c.Update(context.Background(), tj)
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	tj = h.eventuallyCondition(t, ns, "queued", trainer.TrainJobSuspended, metav1.ConditionFalse, trainer.TrainJobResumedReason)
	resumed := meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobSuspended).LastTransitionTime
	g.Expect(tj.Status.StartTime).NotTo(gomega.BeNil(), "a resumed job has no startTime")
	g.Expect(tj.Status.StartTime.Equal(&resumed)).To(gomega.BeTrue(), "startTime %v, resumed %v", tj.Status.StartTime, resumed)
	g.Expect(tj.Status.StartTime.After(tj.CreationTimestamp.Time)).To(gomega.BeTrue())
	g.Expect(slices.ContainsFunc(tj.Status.Conditions, func(c metav1.Condition) bool { return c.Type == trainer.TrainJobComplete })).To(gomega.BeFalse())
}
