package trainjob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// clusterRuntime creates a ClusterTrainingRuntime named after the test's
// namespace (runtimes are cluster-scoped and tests share the API server).
func (h *harness) clusterRuntime(t *testing.T, ns, suffix string, spec *trainer.TrainingRuntimeSpec) string {
	t.Helper()
	name := ns + "-" + suffix
	h.create(t, trainertesting.MakeClusterTrainingRuntime(name).Spec(spec).Obj())
	t.Cleanup(func() {
		_ = h.c.Delete(context.Background(), &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return name
}

// newTrainJob is a TrainJob in ns referencing the cluster runtime.
func newTrainJob(ns, name, runtimeName string) *trainertesting.TrainJobWrapper {
	w := trainertesting.MakeTrainJob(name, ns).RuntimeRef(trainer.ClusterTrainingRuntimeKind, runtimeName)
	w.UID = ""
	return w
}

func torchRuntimeSpec() *trainer.TrainingRuntimeSpec {
	return trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("torch:runtime")).Obj()
}

func container(js *jobsetv1alpha2.JobSet, job, name string) *corev1.Container {
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		if rj.Name != job {
			continue
		}
		for j := range rj.Template.Spec.Template.Spec.Containers {
			if c := &rj.Template.Spec.Template.Spec.Containers[j]; c.Name == name {
				return c
			}
		}
	}
	return nil
}

func replicatedJob(js *jobsetv1alpha2.JobSet, name string) *jobsetv1alpha2.ReplicatedJob {
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == name {
			return &js.Spec.ReplicatedJobs[i]
		}
	}
	return nil
}

func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func expectControlledBy(g gomega.Gomega, obj client.Object, tj *trainer.TrainJob) {
	ref := metav1.GetControllerOf(obj)
	g.Expect(ref).NotTo(gomega.BeNil(), "%T %s has no controller reference", obj, obj.GetName())
	g.Expect(ref.UID).To(gomega.Equal(tj.UID))
	g.Expect(ref.Kind).To(gomega.Equal(trainer.TrainJobKind))
	g.Expect(ptr.Deref(ref.BlockOwnerDeletion, false)).To(gomega.BeTrue())
}

func appliedByTrainer(obj client.Object) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == FieldOwner && m.Operation == metav1.ManagedFieldsOperationApply
	})
}

func TestTorchTrainJobBecomesJobSet(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "train", rtName).NumNodes(3).Image("torch:user").Command("torchrun", "train.py").Obj())

	js := h.eventuallyJobSet(t, ns, "train")
	tj := h.eventuallyCreated(t, ns, "train")

	expectControlledBy(g, js, tj)
	g.Expect(appliedByTrainer(js)).To(gomega.BeTrue(), "JobSet must be server-side applied by field manager %q", FieldOwner)
	g.Expect(ptr.Deref(js.Spec.Suspend, true)).To(gomega.BeFalse())
	node := replicatedJob(js, trainer.TrainerNodeName)
	g.Expect(node).NotTo(gomega.BeNil())
	g.Expect(node.Template.Spec.Parallelism).To(gomega.Equal(ptr.To[int32](3)))
	g.Expect(node.Template.Spec.Completions).To(gomega.Equal(ptr.To[int32](3)))
	c := container(js, trainer.TrainerNodeName, trainer.TrainerNodeName)
	g.Expect(c.Image).To(gomega.Equal("torch:user"))
	g.Expect(c.Command).To(gomega.Equal([]string{"torchrun", "train.py"}))
	for name, want := range map[string]string{
		trainer.TorchEnvNumNodes:   "3",
		trainer.TorchEnvMasterAddr: "train-node-0-0.train",
		trainer.TorchEnvMasterPort: "29500",
	} {
		got, ok := envValue(c, name)
		g.Expect(ok).To(gomega.BeTrue(), "env %s missing", name)
		g.Expect(got).To(gomega.Equal(want), "env %s", name)
	}
	// Like Trainer v2.3, a job whose JobSet is created records no event:
	// the JobSet (owned by the job, of the same name) is the record, and
	// an event is one more API write per job. Only failures are events.
	g.Consistently(func(g gomega.Gomega) []string { return h.eventReasons(g, ns, "train") }).
		WithTimeout(3 * time.Second).Should(gomega.BeEmpty())
	g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobFailed)).To(gomega.BeNil())
}

func TestMPITrainJobCreatesSecretHostfileAndJobSet(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	spec := trainertesting.MakeRuntimeSpec().MPI(2, false).ReplicatedJob(trainertesting.MPIJobs("mpi:runtime")...).Obj()
	rtName := h.clusterRuntime(t, ns, "mpi", spec)
	h.create(t, newTrainJob(ns, "pi", rtName).NumNodes(2).Obj())

	js := h.eventuallyJobSet(t, ns, "pi")
	tj := h.eventuallyCreated(t, ns, "pi")

	secret := &corev1.Secret{}
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "pi" + trainer.MPISSHAuthSecretSuffix}, secret)).To(gomega.Succeed())
	g.Expect(secret.Type).To(gomega.Equal(corev1.SecretTypeSSHAuth))
	g.Expect(ptr.Deref(secret.Immutable, false)).To(gomega.BeTrue())
	g.Expect(secret.Data).To(gomega.HaveKey(corev1.SSHAuthPrivateKey))

	hostfile := &corev1.ConfigMap{}
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "pi" + trainer.MPIHostfileConfigMapSuffix}, hostfile)).To(gomega.Succeed())
	g.Expect(hostfile.Data[trainer.MPIHostfileName]).To(gomega.Equal(
		"pi-node-0-0.pi slots=2\npi-node-0-1.pi slots=2\n"))
	g.Expect(appliedByTrainer(hostfile)).To(gomega.BeTrue())

	for _, obj := range []client.Object{js, secret, hostfile} {
		expectControlledBy(g, obj, tj)
	}
	g.Expect(replicatedJob(js, trainer.TrainerNodeName).Template.Spec.Parallelism).To(gomega.Equal(ptr.To[int32](2)))
	launcher := replicatedJob(js, trainer.LauncherName)
	g.Expect(launcher.Template.Spec.Parallelism).To(gomega.Equal(ptr.To[int32](1)))
	volumes := launcher.Template.Spec.Template.Spec.Volumes
	g.Expect(volumes).To(gomega.ContainElement(gomega.HaveField("Name", trainer.MPIHostfileVolumeName)))
	g.Expect(volumes).To(gomega.ContainElement(gomega.HaveField("Name", trainer.MPISSHAuthVolumeName)))

	// The key pair is generated once: another reconcile must not replace it.
	key := string(secret.Data[corev1.SSHAuthPrivateKey])
	h.forceReconcile(t, tj)
	g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(secret), secret)).To(gomega.Succeed())
	g.Expect(string(secret.Data[corev1.SSHAuthPrivateKey])).To(gomega.Equal(key))
}

func TestJAXAndXGBoostTrainJobsGetTheirEnvironment(t *testing.T) {
	h := startHarness(t)
	ns := h.newNamespace(t)
	cases := []struct {
		name    string
		spec    *trainer.TrainingRuntimeSpec
		wantEnv map[string]string
	}{
		{
			name: "jax",
			spec: trainertesting.MakeRuntimeSpec().JAX().ReplicatedJob(trainertesting.TrainerJob("jax:runtime")).Obj(),
			wantEnv: map[string]string{
				"JAX_NUM_PROCESSES":       "2",
				"JAX_COORDINATOR_ADDRESS": "jax-node-0-0.jax:29500",
			},
		},
		{
			name: "xgboost",
			spec: trainertesting.MakeRuntimeSpec().XGBoost().ReplicatedJob(trainertesting.TrainerJob("xgboost:runtime")).Obj(),
			wantEnv: map[string]string{
				"DMLC_NUM_WORKER":   "2",
				"DMLC_TRACKER_URI":  "xgboost-node-0-0.xgboost",
				"DMLC_TRACKER_PORT": "29500",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			rtName := h.clusterRuntime(t, ns, tc.name, tc.spec)
			h.create(t, newTrainJob(ns, tc.name, rtName).NumNodes(2).Obj())
			js := h.eventuallyJobSet(t, ns, tc.name)
			h.eventuallyCreated(t, ns, tc.name)
			g.Expect(replicatedJob(js, trainer.TrainerNodeName).Template.Spec.Parallelism).To(gomega.Equal(ptr.To[int32](2)))
			c := container(js, trainer.TrainerNodeName, trainer.TrainerNodeName)
			for name, want := range tc.wantEnv {
				got, ok := envValue(c, name)
				g.Expect(ok).To(gomega.BeTrue(), "env %s missing from %v", name, c.Env)
				g.Expect(got).To(gomega.Equal(want), "env %s", name)
			}
		})
	}
}

// TestReconcileThatChangesNothingSendsNoWrite: running, or suspended
// (Kueue holds every queued job suspended, and a suspended JobSet is the
// one the controller applies again, checked against a cache that holds no
// JobSet spec), a reconcile that finds nothing changed writes nothing, and
// no JobSet is read past the cache.
func TestReconcileThatChangesNothingSendsNoWrite(t *testing.T) {
	h := startHarness(t)
	for _, suspended := range []bool{false, true} {
		t.Run(fmt.Sprintf("suspended=%v", suspended), func(t *testing.T) {
			g := gomega.NewWithT(t)
			ns := h.newNamespace(t)
			spec := trainertesting.MakeRuntimeSpec().MPI(1, false).ReplicatedJob(trainertesting.MPIJobs("mpi:runtime")...).Obj()
			rtName := h.clusterRuntime(t, ns, "mpi", spec)
			h.create(t, newTrainJob(ns, "quiet", rtName).NumNodes(2).Suspend(suspended).Obj())
			h.eventuallyJobSet(t, ns, "quiet")
			tj := h.eventuallyCreated(t, ns, "quiet")

			// Let the reconciles triggered by the creation run out first.
			h.forceReconcile(t, tj)
			before := h.writes.InNamespace(ns)
			t.Logf("writes to create an MPI TrainJob: %d", before)
			jsBefore := h.eventuallyJobSet(t, ns, "quiet")
			tjBefore := h.trainJob(g, ns, "quiet")

			h.forceReconcile(t, tj)
			h.forceReconcile(t, tj)

			g.Expect(h.writes.InNamespace(ns)).To(gomega.Equal(before), "writes: %v", h.writes.Log())
			jsAfter := h.eventuallyJobSet(t, ns, "quiet")
			g.Expect(jsAfter.ResourceVersion).To(gomega.Equal(jsBefore.ResourceVersion))
			tjAfter := h.trainJob(g, ns, "quiet")
			g.Expect(tjAfter.Status).To(gomega.Equal(tjBefore.Status))
			// The cache holds JobSets without their spec; neither
			// creating nor checking one needs it from the API server.
			g.Expect(h.pastCache.count(ns, &jobsetv1alpha2.JobSet{})).To(gomega.BeZero(), "JobSets read past the cache")
		})
	}
}

// TestCachedJobSetsAreTrimmed: the manager's cache keeps a JobSet's
// metadata, status and suspend, not its replicated jobs, and holds the
// runtime snapshot, the same on every job of one runtime, once.
func TestCachedJobSetsAreTrimmed(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "first", rtName).Obj())
	h.create(t, newTrainJob(ns, "second", rtName).Obj())
	whole := h.eventuallyJobSet(t, ns, "first")
	g.Expect(whole.Spec.ReplicatedJobs).NotTo(gomega.BeEmpty())
	h.eventuallyJobSet(t, ns, "second")

	cached := func(name string) *jobsetv1alpha2.JobSet {
		js := &jobsetv1alpha2.JobSet{}
		g.Eventually(func() error {
			return h.seen.cache.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, js)
		}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
		return js
	}
	first, second := cached("first"), cached("second")
	// Of the replicated jobs the cache keeps names and counts only.
	g.Expect(first.Spec.ReplicatedJobs).To(gomega.HaveLen(len(whole.Spec.ReplicatedJobs)))
	for i, rj := range first.Spec.ReplicatedJobs {
		w := whole.Spec.ReplicatedJobs[i]
		kept := jobsetv1alpha2.ReplicatedJob{Name: w.Name, Replicas: w.Replicas}
		kept.Template.Spec.Parallelism, kept.Template.Spec.Completions = w.Template.Spec.Parallelism, w.Template.Spec.Completions
		g.Expect(rj).To(gomega.Equal(kept), "the cache keeps the template of replicated job %s", w.Name)
	}
	g.Expect(first.Spec.Suspend).To(gomega.Equal(whole.Spec.Suspend))
	g.Expect(first.OwnerReferences).To(gomega.Equal(whole.OwnerReferences))
	g.Expect(first.Annotations).To(gomega.HaveKeyWithValue(RuntimeSnapshotAnnotation, whole.Annotations[RuntimeSnapshotAnnotation]))
	a, b := first.Annotations[RuntimeSnapshotAnnotation], second.Annotations[RuntimeSnapshotAnnotation]
	g.Expect(a).To(gomega.Equal(b))
	g.Expect(unsafe.StringData(a)).To(gomega.Equal(unsafe.StringData(b)), "the two JobSets' runtime snapshots are two copies")
}

func TestHandEditedJobSetIsRestoredOnlyWhileSuspended(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "drift", rtName).Image("torch:user").Suspend(true).Obj())
	h.eventuallyJobSet(t, ns, "drift")

	editImage := func(image string) {
		g.Eventually(func() error {
			js := h.eventuallyJobSet(t, ns, "drift")
			container(js, trainer.TrainerNodeName, trainer.TrainerNodeName).Image = image
			return h.c.Update(context.Background(), js)
		}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	}
	image := func() string {
		return container(h.eventuallyJobSet(t, ns, "drift"), trainer.TrainerNodeName, trainer.TrainerNodeName).Image
	}

	editImage("edited:by-hand")
	g.Eventually(image).WithTimeout(20 * time.Second).Should(gomega.Equal("torch:user"))

	// Resumed, the JobSet's template is immutable and left alone.
	tj := h.trainJob(g, ns, "drift")
	tj.Spec.Suspend = ptr.To(false)
	g.Expect(h.c.Update(context.Background(), tj)).To(gomega.Succeed())
	g.Eventually(func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, "drift").Spec.Suspend, true) }).
		WithTimeout(20 * time.Second).Should(gomega.BeFalse())
	editImage("edited:while-running")
	h.forceReconcile(t, tj)
	g.Expect(image()).To(gomega.Equal("edited:while-running"))
}

// TestTrainerStatusSurvivesStatusWrites: status.trainerStatus, written by
// the progress endpoint (field manager trainer-status), is kept when the
// controller writes the status from the JobSet, here through to Complete.
func TestTrainerStatusSurvivesStatusWrites(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "reports", rtName).Obj())
	h.eventuallyJobSet(t, ns, "reports")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"trainerStatus":{"progressPercentage":60,"lastUpdatedTime":"2026-11-24T10:00:00Z"}}}`))
	g.Expect(h.c.Status().Patch(context.Background(), h.trainJob(g, ns, "reports"), patch, client.FieldOwner("trainer-status"))).To(gomega.Succeed())

	h.setJobSetStatus(t, ns, "reports", func(s *jobsetv1alpha2.JobSetStatus) {
		s.ReplicatedJobsStatus = []jobsetv1alpha2.ReplicatedJobStatus{{Name: trainer.TrainerNodeName, Succeeded: 1}}
		s.Conditions = []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue, Reason: "AllJobsCompleted", Message: "done", LastTransitionTime: metav1.Now()}}
	})
	tj := h.eventuallyCondition(t, ns, "reports", trainer.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted")
	g.Expect(tj.Status.TrainerStatus).NotTo(gomega.BeNil(), "the controller's status write dropped trainerStatus")
	g.Expect(tj.Status.TrainerStatus.ProgressPercentage).To(gomega.HaveValue(gomega.BeEquivalentTo(60)))
}

func TestJobSetConditionsAreMirrored(t *testing.T) {
	h := startHarness(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())

	jobStatus := func(active, succeeded int32) []jobsetv1alpha2.ReplicatedJobStatus {
		return []jobsetv1alpha2.ReplicatedJobStatus{{Name: trainer.TrainerNodeName, Active: active, Ready: active, Succeeded: succeeded}}
	}
	condition := func(typ jobsetv1alpha2.JobSetConditionType, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: string(typ), Status: metav1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	}
	cases := []struct {
		name       string
		final      metav1.Condition
		wantType   string
		wantReason string
	}{
		{"complete", condition(jobsetv1alpha2.JobSetCompleted, "AllJobsCompleted", "jobset completed successfully"), trainer.TrainJobComplete, "AllJobsCompleted"},
		{"failed", condition(jobsetv1alpha2.JobSetFailed, "FailedJobs", "jobset failed due to one or more job failures"), trainer.TrainJobFailed, "FailedJobs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			h.create(t, newTrainJob(ns, tc.name, rtName).Obj())
			h.eventuallyJobSet(t, ns, tc.name)

			h.setJobSetStatus(t, ns, tc.name, func(s *jobsetv1alpha2.JobSetStatus) { s.ReplicatedJobsStatus = jobStatus(1, 0) })
			var tj *trainer.TrainJob
			g.Eventually(func(g gomega.Gomega) {
				tj = h.trainJob(g, ns, tc.name)
				g.Expect(tj.Status.JobsStatus).To(gomega.HaveLen(1))
				g.Expect(tj.Status.JobsStatus[0].Active).To(gomega.Equal(ptr.To[int32](1)))
			}).WithTimeout(20 * time.Second).Should(gomega.Succeed())
			// Running, as the Kubeflow SDK tells it: no condition at all.
			g.Expect(tj.Status.Conditions).To(gomega.BeEmpty())

			h.setJobSetStatus(t, ns, tc.name, func(s *jobsetv1alpha2.JobSetStatus) {
				s.ReplicatedJobsStatus = jobStatus(0, 1)
				s.Conditions = append(s.Conditions, tc.final)
			})
			tj = h.eventuallyCondition(t, ns, tc.name, tc.wantType, metav1.ConditionTrue, tc.wantReason)
			g.Expect(meta.FindStatusCondition(tj.Status.Conditions, tc.wantType).Message).To(gomega.Equal(tc.final.Message))
			g.Expect(tj.Status.Conditions).To(gomega.HaveLen(1), "only the terminal condition: %v", tj.Status.Conditions)
			g.Expect(tj.Status.JobsStatus[0].Succeeded).To(gomega.Equal(ptr.To[int32](1)))

			// JobSet's TTL deletes a finished JobSet; the TrainJob must not start over.
			g.Expect(h.c.Delete(context.Background(), &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}})).To(gomega.Succeed())
			h.forceReconcile(t, tj)
			err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: tc.name}, &jobsetv1alpha2.JobSet{})
			g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "a finished TrainJob's JobSet was recreated: %v", err)
			g.Expect(meta.IsStatusConditionTrue(h.trainJob(g, ns, tc.name).Status.Conditions, tc.wantType)).To(gomega.BeTrue())
		})
	}
}

func TestSuspendAndResumeReachTheJobSet(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "pause", rtName).Suspend(true).Obj())

	jobSetSuspended := func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, "pause").Spec.Suspend, false) }
	setSuspend := func(v bool) {
		g.Eventually(func() error {
			tj := h.trainJob(g, ns, "pause")
			tj.Spec.Suspend = ptr.To(v)
			return h.c.Update(context.Background(), tj)
		}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	}

	g.Expect(jobSetSuspended()).To(gomega.BeTrue())
	h.eventuallyCondition(t, ns, "pause", trainer.TrainJobSuspended, metav1.ConditionTrue, trainer.TrainJobSuspendedReason)

	setSuspend(false)
	g.Eventually(jobSetSuspended).WithTimeout(20 * time.Second).Should(gomega.BeFalse())
	h.eventuallyCondition(t, ns, "pause", trainer.TrainJobSuspended, metav1.ConditionFalse, trainer.TrainJobResumedReason)

	setSuspend(true)
	g.Eventually(jobSetSuspended).WithTimeout(20 * time.Second).Should(gomega.BeTrue())
	h.eventuallyCondition(t, ns, "pause", trainer.TrainJobSuspended, metav1.ConditionTrue, trainer.TrainJobSuspendedReason)
}

// TestResumeUsesTheRuntimeTheJobStartedWith: a job that ran, was suspended
// (as Kueue's preemption does) and resumed comes back built from the
// runtime as it was when the job was created, kept on its JobSet; the
// runtime's edit, or its deletion, meanwhile does not reach it. A job
// created suspended (queued) is snapshot at creation too, as in Trainer
// v2.3, so it also starts with the runtime as it was then.
func TestResumeUsesTheRuntimeTheJobStartedWith(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	h.create(t, newTrainJob(ns, "ran", rtName).Obj(), newTrainJob(ns, "queued", rtName).Suspend(true).Obj())
	image := func(name string) string {
		return container(h.eventuallyJobSet(t, ns, name), trainer.TrainerNodeName, trainer.TrainerNodeName).Image
	}
	g.Expect(image("ran")).To(gomega.Equal("torch:runtime"))
	g.Expect(h.eventuallyJobSet(t, ns, "ran").Annotations).To(gomega.HaveKeyWithValue(RuntimeSnapshotAnnotation,
		gomega.And(gomega.ContainSubstring(`"kind":"ClusterTrainingRuntime"`), gomega.ContainSubstring(`"torch:runtime"`))))
	g.Expect(h.eventuallyJobSet(t, ns, "queued").Annotations).To(gomega.HaveKeyWithValue(RuntimeSnapshotAnnotation, gomega.ContainSubstring(`"torch:runtime"`)),
		"a job created suspended is snapshot at creation")

	setSuspend := func(name string, v bool) {
		g.Eventually(func() error {
			tj := h.trainJob(g, ns, name)
			tj.Spec.Suspend = ptr.To(v)
			return h.c.Update(context.Background(), tj)
		}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	}
	setSuspend("ran", true)
	g.Eventually(func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, "ran").Spec.Suspend, false) }).
		WithTimeout(20 * time.Second).Should(gomega.BeTrue())

	g.Eventually(func() error {
		rt := &trainer.ClusterTrainingRuntime{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Name: rtName}, rt); err != nil {
			return err
		}
		rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "torch:edited"
		return h.c.Update(context.Background(), rt)
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())

	setSuspend("ran", false)
	g.Eventually(func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, "ran").Spec.Suspend, true) }).
		WithTimeout(20 * time.Second).Should(gomega.BeFalse())
	g.Expect(image("ran")).To(gomega.Equal("torch:runtime"), "the resumed job runs the runtime it started with")

	setSuspend("queued", false)
	g.Eventually(func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, "queued").Spec.Suspend, true) }).
		WithTimeout(20 * time.Second).Should(gomega.BeFalse())
	g.Expect(image("queued")).To(gomega.Equal("torch:runtime"), "a job created suspended starts with the runtime it was created with")
	g.Expect(h.eventuallyJobSet(t, ns, "queued").Annotations).To(gomega.HaveKeyWithValue(RuntimeSnapshotAnnotation, gomega.ContainSubstring(`"torch:runtime"`)))

	// Trainer v2.3 holds no runtime with a finalizer; with the snapshot a
	// job that ran does not need its runtime any more: suspended, its
	// runtime deleted, and resumed, it runs as it started and fails nothing.
	setSuspend("ran", true)
	g.Eventually(func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, "ran").Spec.Suspend, false) }).
		WithTimeout(20 * time.Second).Should(gomega.BeTrue())
	g.Expect(h.c.Delete(context.Background(), &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: rtName}})).To(gomega.Succeed())
	g.Eventually(func() error {
		return h.c.Get(context.Background(), types.NamespacedName{Name: rtName}, &trainer.ClusterTrainingRuntime{})
	}).WithTimeout(10 * time.Second).Should(gomega.Satisfy(apierrors.IsNotFound))
	setSuspend("ran", false)
	g.Eventually(func() bool { return ptr.Deref(h.eventuallyJobSet(t, ns, "ran").Spec.Suspend, true) }).
		WithTimeout(20 * time.Second).Should(gomega.BeFalse())
	g.Expect(image("ran")).To(gomega.Equal("torch:runtime"))
	g.Consistently(func(g gomega.Gomega) {
		ran := h.trainJob(g, ns, "ran")
		g.Expect(meta.FindStatusCondition(ran.Status.Conditions, trainer.TrainJobFailed)).To(gomega.BeNil(), "conditions %v", ran.Status.Conditions)
		g.Expect(meta.IsStatusConditionFalse(ran.Status.Conditions, trainer.TrainJobCreated)).To(gomega.BeFalse(), "conditions %v", ran.Status.Conditions)
	}).WithTimeout(2 * time.Second).Should(gomega.Succeed())
}

func TestActiveDeadlineFailsTheJobAndDeletesTheJobSet(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	tj := newTrainJob(ns, "bounded", rtName).Obj()
	tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	h.create(t, tj)
	h.eventuallyJobSet(t, ns, "bounded")

	tj = h.eventuallyCondition(t, ns, "bounded", trainer.TrainJobFailed, metav1.ConditionTrue, trainer.TrainJobDeadlineExceededReason)
	// Trainer's message, which tools may match; the event says how long.
	g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobFailed).Message).To(gomega.Equal("TrainJob exceeded its active deadline"))
	g.Eventually(func() bool {
		err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bounded"}, &jobsetv1alpha2.JobSet{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(10 * time.Second).Should(gomega.BeTrue())
	g.Eventually(func(g gomega.Gomega) []string { return h.eventReasons(g, ns, "bounded") }).
		WithTimeout(10 * time.Second).Should(gomega.ContainElement(trainer.TrainJobDeadlineExceededReason))

	h.forceReconcile(t, tj)
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bounded"}, &jobsetv1alpha2.JobSet{})
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "the JobSet of a job past its deadline was recreated")
}

// TestJobWaitsForItsRuntime: a TrainJob applied before its runtime waits
// for it (Created=False, TrainingRuntimeNotFound, not Failed) and starts as
// soon as the runtime is created, woken by the runtime's creation.
func TestJobWaitsForItsRuntime(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	h.create(t, newTrainJob(ns, "early", ns+"-soon").Obj())

	tj := h.eventuallyCondition(t, ns, "early", trainer.TrainJobCreated, metav1.ConditionFalse, trainer.TrainJobRuntimeNotFoundReason)
	g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobCreated).Message).To(gomega.ContainSubstring("fails unless it exists by"))
	g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobFailed)).To(gomega.BeNil(), "failed before the grace period ended")

	h.clusterRuntime(t, ns, "soon", torchRuntimeSpec())
	h.eventuallyCreated(t, ns, "early")
	g.Expect(h.trainJob(g, ns, "early").Status.Conditions).To(gomega.BeEmpty())
}

// TestMissingRuntimeFailsTheJobForGood: past the grace period a missing
// runtime fails the job; a runtime created later does not revive it.
func TestMissingRuntimeFailsTheJobForGood(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := ns + "-later"
	h.create(t, newTrainJob(ns, "orphan", rtName).Obj())

	tj := h.eventuallyCondition(t, ns, "orphan", trainer.TrainJobFailed, metav1.ConditionTrue, trainer.TrainJobRuntimeNotFoundReason)
	created := meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobCreated)
	g.Expect(created).NotTo(gomega.BeNil())
	g.Expect(created.Status).To(gomega.Equal(metav1.ConditionFalse))
	g.Expect(created.Reason).To(gomega.Equal(trainer.TrainJobRuntimeNotFoundReason))
	g.Expect(tj.Status.Conditions[len(tj.Status.Conditions)-1].Type).To(gomega.Equal(trainer.TrainJobFailed), "the printed state is the last condition")
	g.Eventually(func(g gomega.Gomega) []string { return h.eventReasons(g, ns, "orphan") }).
		WithTimeout(10 * time.Second).Should(gomega.ContainElement(trainer.TrainJobRuntimeNotFoundReason))

	h.clusterRuntime(t, ns, "later", torchRuntimeSpec())
	h.forceReconcile(t, tj)
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "orphan"}, &jobsetv1alpha2.JobSet{})
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "a failed TrainJob started once its runtime appeared")
	g.Expect(meta.IsStatusConditionTrue(h.trainJob(g, ns, "orphan").Status.Conditions, trainer.TrainJobFailed)).To(gomega.BeTrue())
}

func TestUnsupportedRuntimeKindFailsTheJob(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	h.create(t, newTrainJob(ns, "legacy", "whatever").RuntimeRef("PyTorchJob", "whatever").Obj())

	tj := h.eventuallyCondition(t, ns, "legacy", trainer.TrainJobFailed, metav1.ConditionTrue, trainer.TrainJobRuntimeNotSupportedReason)
	g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobFailed).Message).To(gomega.ContainSubstring("PyTorchJob"))
}

func TestTransientApplyErrorIsRetriedWithoutFailingTheJob(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	remaining := h.faults.failJobSetApplies(ns, 1)
	h.create(t, newTrainJob(ns, "flaky", rtName).Obj())

	h.eventuallyJobSet(t, ns, "flaky")
	tj := h.eventuallyCreated(t, ns, "flaky")
	g.Expect(remaining.Load()).To(gomega.BeZero(), "the injected failure was never hit")
	g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobFailed)).To(gomega.BeNil())
	// The failure was reported while it lasted, with Trainer v2.3's reason
	// (pkg/controller/trainjob_controller.go: "TrainJobResourcesCreationFailed").
	g.Eventually(func(g gomega.Gomega) []string { return h.eventReasons(g, ns, "flaky") }).
		WithTimeout(10 * time.Second).Should(gomega.ContainElement(ReasonResourcesCreationFailed))
}

func TestManagedByAnotherControllerIsLeftAlone(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	tj := newTrainJob(ns, "remote", rtName).Obj()
	tj.Spec.ManagedBy = ptr.To(trainer.MultiKueueManagedBy)
	h.create(t, tj)

	h.forceReconcile(t, tj)
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "remote"}, &jobsetv1alpha2.JobSet{})
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue())
	g.Expect(h.trainJob(g, ns, "remote").Status.Conditions).To(gomega.BeEmpty())
	g.Expect(h.writes.InNamespace(ns)).To(gomega.BeZero())
}

func TestDeletedTrainJobDropsItsMetrics(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "torch", torchRuntimeSpec())
	tj := newTrainJob(ns, "gone", rtName).Obj()
	h.create(t, tj)
	h.eventuallyCreated(t, ns, "gone")
	series := func() []string { return gaugeStates(t, h.reg, ns, "gone") }
	g.Eventually(series).WithTimeout(10 * time.Second).Should(gomega.Equal([]string{StateCreated}))

	g.Expect(h.c.Delete(context.Background(), tj)).To(gomega.Succeed())
	g.Eventually(series).WithTimeout(20 * time.Second).Should(gomega.BeEmpty())
	g.Expect(counterValue(t, h.reg, "gantry_trainjob_created_total", map[string]string{"namespace": ns})).To(gomega.Equal(1.0))
}

// jobNames is for readable failure messages.
func jobNames(js *jobsetv1alpha2.JobSet) string {
	var names []string
	for _, rj := range js.Spec.ReplicatedJobs {
		names = append(names, rj.Name)
	}
	return strings.Join(names, ",")
}

// TestElasticJobIsResizedInPlace: a running elastic job's numNodes change
// reaches its JobSet's trainer job (parallelism and completions, nothing
// else of the template), and the job gets a Resized event; a static job
// may not change numNodes at all (the CRD lets the field change only so
// the webhook can decide, and the controller leaves a running JobSet
// alone).
func TestElasticJobIsResizedInPlace(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).TorchElastic(1, 4, nil).ReplicatedJob(trainertesting.TrainerJob("torch:runtime")).Obj()
	rtName := h.clusterRuntime(t, ns, "elastic", spec)
	h.create(t, newTrainJob(ns, "grow", rtName).NumNodes(2).Image("torch:user").Obj())
	before := h.eventuallyJobSet(t, ns, "grow")
	g.Expect(replicatedJob(before, trainer.TrainerNodeName).Template.Spec.Parallelism).To(gomega.Equal(ptr.To[int32](2)))

	tj := h.trainJob(g, ns, "grow")
	tj.Spec.Trainer.NumNodes = ptr.To[int32](3)
	g.Expect(h.c.Update(context.Background(), tj)).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		js := h.eventuallyJobSet(t, ns, "grow")
		node := replicatedJob(js, trainer.TrainerNodeName).Template.Spec
		g.Expect(node.Parallelism).To(gomega.Equal(ptr.To[int32](3)))
		g.Expect(node.Completions).To(gomega.Equal(ptr.To[int32](3)))
		// Nothing else of the replicated job changed (JobSet's webhook
		// would refuse it).
		want := replicatedJob(before, trainer.TrainerNodeName).DeepCopy()
		want.Template.Spec.Parallelism, want.Template.Spec.Completions = node.Parallelism, node.Completions
		g.Expect(*replicatedJob(js, trainer.TrainerNodeName)).To(gomega.Equal(*want))
	}).WithTimeout(20 * time.Second).Should(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) []string { return h.eventReasons(g, ns, "grow") }).
		WithTimeout(10 * time.Second).Should(gomega.ContainElement(ReasonResized))
}
