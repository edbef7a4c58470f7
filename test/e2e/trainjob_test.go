//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
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

// The shipped runtimes, read when the spec tree is built so that each is a
// table entry of its own; a read error fails the "has ..." spec.
// shippedRuntimeFiles are the ClusterTrainingRuntimes of config/runtimes:
// every YAML file but the kustomization.
var shippedRuntimeFiles, shippedRuntimeFilesErr = func() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "runtimes", "*.yaml"))
	return slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" }), err
}()

// expectShippedRuntime waits for the manager to have installed the shipped
// ClusterTrainingRuntime name from the chart's ConfigMap (one helm install;
// the manager applies them as it starts).
func expectShippedRuntime(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		rt := &trainerv1alpha1.ClusterTrainingRuntime{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Name: name}, rt)).To(Succeed())
		g.Expect(rt.Labels).To(HaveKey("trainer.gantry.dev/runtime-set"), "installed by the manager from the chart's ConfigMap")
	}).WithTimeout(time.Minute).Should(Succeed(), "the manager installs the shipped runtime %s", name)
}

var _ = Describe("TrainJob", Label(labelTrainJob), func() {
	// The sample TrainJob on the shipped torch-distributed runtime becomes a
	// JobSet the TrainJob controls; deleting the TrainJob lets the garbage
	// collector delete the JobSet (deleted here right away; "runs to
	// completion" follows a whole life).
	It("on the shipped runtime becomes a JobSet it controls, deleted with it", func(ctx SpecContext) {
		expectShippedRuntime(ctx, torchRuntime)
		ns := newNamespace(ctx, "trainjob")

		tj := loadSample[trainerv1alpha1.TrainJob](trainJobSample)
		tj.Namespace = ns
		createStrict(ctx, tj)

		jobSet := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}}
		Eventually(ctx, func(g Gomega) {
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
		Expect(node).NotTo(BeNil(), "replicated job %q in JobSet %s", trainerJob, jobSet.Name)
		Expect(node.Template.Spec.Parallelism).To(HaveValue(Equal(*tj.Spec.Trainer.NumNodes)), "parallelism = numNodes")
		Expect(node.Template.Spec.Template.Spec.Containers).To(ContainElement(And(
			HaveField("Name", trainerJob),
			HaveField("Image", *tj.Spec.Trainer.Image),
			HaveField("Command", tj.Spec.Trainer.Command),
		)), "the trainer container carries the TrainJob's image and command")

		Eventually(ctx, func(g Gomega) {
			got := &trainerv1alpha1.TrainJob{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
			// Trainer's condition set, no Created or Running: the Kubeflow
			// SDK reads a job as Running only while it has no condition.
			for _, typ := range []string{trainerv1alpha1.TrainJobCreated, trainerv1alpha1.TrainJobRunning} {
				g.Expect(conditionTrue(got.Status.Conditions, typ)).To(BeFalse(), "condition %s: %v", typ, got.Status.Conditions)
			}
		}).Should(Succeed())

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), tj)).To(Succeed())
		Expect(tj.Finalizers).To(BeEmpty(), "the JobSet's deletion below is the garbage collector's only without a finalizer")
		Expect(k8s.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
			expectGone(g, ctx, &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobSet.Name}})
		}).Should(Succeed())
	})

	// The sample TrainJob runs its whole life on the real JobSet controller:
	// JobSet → Jobs → Pods that run and succeed (kwok's stages) → JobSet
	// Completed → TrainJob Complete. Deleting it cascades through the JobSet
	// and Jobs to the Pods.
	It("runs to completion on the JobSet controller and cascades its deletion", func(ctx SpecContext) {
		ns := newNamespace(ctx, "trainjob-complete")
		tj := loadSample[trainerv1alpha1.TrainJob](trainJobSample)
		tj.Namespace = ns
		createStrict(ctx, tj)

		// Both nodes' pods exist and belong to the JobSet's Jobs.
		Eventually(ctx, func(g Gomega) {
			pods := listPods(g, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name})
			g.Expect(pods).To(HaveLen(int(*tj.Spec.Trainer.NumNodes)))
		}).Should(Succeed())

		complete := expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)
		GinkgoWriter.Printf("TrainJob Complete: %s: %s\n", complete.Reason, complete.Message)
		js := &jobsetv1alpha2.JobSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), js)).To(Succeed())
		Expect(conditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted))).To(BeTrue(), "JobSet %v", js.Status.Conditions)
		for _, p := range listPods(Default, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}) {
			Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
		}

		Expect(k8s.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
			jobs := &batchv1.JobList{}
			g.Expect(k8s.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
			g.Expect(jobs.Items).To(BeEmpty(), "Jobs left after the TrainJob was deleted")
			g.Expect(listPods(g, ctx, ns, nil)).To(BeEmpty(), "Pods left after the TrainJob was deleted")
		}).Should(Succeed())
	})

	// ttlSecondsAfterFinished (Gantry's addition to v1alpha1, which
	// Trainer's clients ignore): a TrainJob that completed is deleted that
	// long after, with its JobSet, and counted in
	// gantry_trainjob_ttl_deleted_total (checked where the manager's
	// metrics are readable).
	It("is deleted ttlSecondsAfterFinished after it completes", func(ctx SpecContext) {
		ns := newNamespace(ctx, "trainjob-ttl")
		tj := loadSample[trainerv1alpha1.TrainJob](trainJobSample)
		tj.Namespace = ns
		tj.Spec.TTLSecondsAfterFinished = new(int32(2))
		createStrict(ctx, tj)
		expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
			expectGone(g, ctx, &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
		}).Should(Succeed())
		if _, _, err := metricsGet(ctx); err != nil {
			GinkgoWriter.Printf("gantry_trainjob_ttl_deleted_total not checked: the manager's metrics are not reachable at %s: %v\n", metricsURL(), err)
			return
		}
		deleted := series{name: "gantry_trainjob_ttl_deleted_total", labels: map[string]string{"namespace": ns}}
		Eventually(ctx, func(g Gomega) {
			g.Expect(deleted.valueIn(scrape(g, ctx))).To(Equal("1"), "%s", deleted)
		}).Should(Succeed())
	})

	// A trainer pod exiting with code 3 (kwok's gantry.dev/kwok-exit-code
	// annotation, set in the runtime's pod template) fails its Job, the
	// JobSet and so the TrainJob, with the reason on the TrainJob's Failed
	// condition.
	It("fails when a trainer pod fails", func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		ns := newNamespace(ctx, "trainjob-fail")

		rt := torchRuntimeWithPodAnnotations(ctx, ns, "torch-exits-3", map[string]string{"gantry.dev/kwok-exit-code": "3"})
		tj := trainJobOn(rt, "exits-3")
		createStrict(ctx, tj)

		failed := expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobFailed)
		GinkgoWriter.Printf("TrainJob Failed: %s: %s\n", failed.Reason, failed.Message)
		Expect(failed.Reason).NotTo(BeEmpty())
		Expect(failed.Message).NotTo(BeEmpty())
		got := &trainerv1alpha1.TrainJob{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
		Expect(conditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobComplete)).To(BeFalse())
		var exitCodes []int32
		for _, p := range listPods(Default, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}) {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Terminated != nil {
					exitCodes = append(exitCodes, cs.State.Terminated.ExitCode)
				}
			}
		}
		Expect(exitCodes).To(ContainElement(int32(3)), "a trainer container exited with 3")
	})

	// A TrainJob on each shipped ClusterTrainingRuntime, with the runtime's
	// own defaults, runs to Complete on the JobSet controller; MPI jobs get
	// their SSH Secret and hostfile.
	It("has shipped runtimes in config/runtimes", func() {
		Expect(shippedRuntimeFilesErr).NotTo(HaveOccurred())
		Expect(shippedRuntimeFiles).NotTo(BeEmpty(), "no shipped runtimes in config/runtimes")
	})
	DescribeTable("on a shipped ClusterTrainingRuntime runs to Complete", func(ctx SpecContext, file string) {
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		shipped := &trainerv1alpha1.ClusterTrainingRuntime{}
		Expect(yaml.UnmarshalStrict(data, shipped)).To(Succeed(), "%s does not decode strictly", file)
		expectShippedRuntime(ctx, shipped.Name)
		ns := newNamespace(ctx, "runtimes")
		tj := &trainerv1alpha1.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "on-" + strings.ReplaceAll(shipped.Name, ".", "-")},
			Spec:       trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: shipped.Name}},
		}
		provideForRuntime(ctx, ns, tj.Name, shipped)
		createStrict(ctx, tj)
		if shipped.Spec.MLPolicy != nil && shipped.Spec.MLPolicy.MPI != nil {
			Eventually(ctx, func(g Gomega) {
				secret := &corev1.Secret{}
				g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: tj.Name + trainerv1alpha1.MPISSHAuthSecretSuffix}, secret)).To(Succeed())
				g.Expect(secret.Data).NotTo(BeEmpty())
				cm := &corev1.ConfigMap{}
				g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: tj.Name + trainerv1alpha1.MPIHostfileConfigMapSuffix}, cm)).To(Succeed())
				g.Expect(cm.Data).NotTo(BeEmpty())
			}).Should(Succeed())
		}
		c := expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)
		GinkgoWriter.Printf("%s: Complete (%s)\n", tj.Name, c.Reason)
	}, shippedRuntimeEntries())

	// What the Kubeflow SDK's CustomTrainerContainer sends, and any YAML job
	// without a command: an image only. The trainer's pods run that image
	// with no command, so its own entrypoint runs, not a command of the
	// runtime's (Trainer v2.3's runtimes have none; its TorchTune runtimes'
	// `tune run` is what they are for, and stays).
	DescribeTable("on a shipped ClusterTrainingRuntime, with an image only, runs the image's entrypoint", func(ctx SpecContext, file string) {
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		shipped := &trainerv1alpha1.ClusterTrainingRuntime{}
		Expect(yaml.UnmarshalStrict(data, shipped)).To(Succeed(), "%s does not decode strictly", file)
		ns := newNamespace(ctx, "image-only")
		const image = "registry.example/team/train:7"
		tj := &trainerv1alpha1.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "image-only"},
			Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: shipped.Name},
				Trainer: &trainerv1alpha1.Trainer{Image: ptr.To(image)}},
		}
		provideForRuntime(ctx, ns, tj.Name, shipped)
		createStrict(ctx, tj)
		// The trainer step: the replicated job labelled as the trainer, its
		// container "node", as the shipped file has it.
		var step string
		var fileCommand []string
		for _, rj := range shipped.Spec.Template.Spec.ReplicatedJobs {
			if rj.Template.Labels[trainerv1alpha1.LabelTrainJobAncestor] != trainerv1alpha1.AncestorTrainer {
				continue
			}
			step = rj.Name
			for _, c := range rj.Template.Spec.Template.Spec.Containers {
				if c.Name == trainerv1alpha1.TrainerNodeName {
					fileCommand = c.Command
				}
			}
		}
		Expect(step).NotTo(BeEmpty(), "%s has no trainer step", file)
		if !strings.HasPrefix(shipped.Name, "torchtune-") {
			Expect(fileCommand).To(BeEmpty(), "%s gives the trainer a command of its own", file)
		}
		Eventually(ctx, func(g Gomega) {
			pods := listPods(g, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name, jobsetv1alpha2.ReplicatedJobNameKey: step})
			g.Expect(pods).NotTo(BeEmpty(), "no pod of the trainer step %s yet", step)
			for _, p := range pods {
				var node *corev1.Container
				for i := range p.Spec.Containers {
					if p.Spec.Containers[i].Name == trainerv1alpha1.TrainerNodeName {
						node = &p.Spec.Containers[i]
					}
				}
				g.Expect(node).NotTo(BeNil(), "pod %s has no node container", p.Name)
				g.Expect(node.Image).To(Equal(image), "pod %s", p.Name)
				g.Expect(node.Command).To(Equal(fileCommand), "pod %s runs a command instead of its image's entrypoint", p.Name)
			}
		}).Should(Succeed())
	}, shippedRuntimeEntries())

	// Suspending a running TrainJob takes its pods down and marks it
	// Suspended; resuming brings pods back and the job then completes.
	It("suspends and resumes while running", func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		ns := newNamespace(ctx, "trainjob-suspend")
		rt := torchRuntimeWithPodAnnotations(ctx, ns, "torch-runs-15s", map[string]string{"gantry.dev/kwok-run-seconds": "15"})
		tj := trainJobOn(rt, "suspended-midway")
		createStrict(ctx, tj)
		sel := map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}

		Eventually(ctx, func(g Gomega) {
			pods := listPods(g, ctx, ns, sel)
			g.Expect(pods).NotTo(BeEmpty())
			for i := range pods {
				g.Expect(pods[i].Status.Phase).To(Equal(corev1.PodRunning))
			}
		}).Should(Succeed())

		update(ctx, tj, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(true) })
		expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobSuspended)
		Eventually(ctx, func(g Gomega) {
			g.Expect(listPods(g, ctx, ns, sel)).To(BeEmpty(), "pods of a suspended TrainJob")
		}).Should(Succeed())

		update(ctx, tj, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(false) })
		Eventually(ctx, func(g Gomega) {
			g.Expect(listPods(g, ctx, ns, sel)).NotTo(BeEmpty(), "pods after resume")
		}).Should(Succeed())
		expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)
	})

	// A TrainJob still running when its activeDeadlineSeconds pass fails
	// with DeadlineExceeded and its JobSet is deleted.
	It("fails with DeadlineExceeded after activeDeadlineSeconds", func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		ns := newNamespace(ctx, "trainjob-deadline")
		rt := torchRuntimeWithPodAnnotations(ctx, ns, "torch-runs-long", map[string]string{"gantry.dev/kwok-run-seconds": "600"})
		tj := trainJobOn(rt, "too-slow")
		tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](8)
		createStrict(ctx, tj)

		failed := expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Reason).To(Equal(trainerv1alpha1.TrainJobDeadlineExceededReason))
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
		}).Should(Succeed())
	})
})

// shippedRuntimeEntries names each entry after its runtime (the file name
// when it does not decode; the entry then fails).
// provideForRuntime gives a runtime's job what the local control plane
// lacks: a kwok node with GPUs when a container asks for nvidia.com/gpu, and
// for each of the JobSet's volumeClaimPolicies a PersistentVolume of the
// size asked, bound ahead to the claim JobSet will make
// (<template>-<jobset>), so no other spec's claim takes it.
func provideForRuntime(ctx SpecContext, ns, jobSet string, rt *trainerv1alpha1.ClusterTrainingRuntime) {
	GinkgoHelper()
	for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if _, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
				gpu := corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
					corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8"),
				}
				addKwokNode(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-gpu"}, Status: corev1.NodeStatus{Capacity: gpu, Allocatable: gpu}})
				break
			}
		}
	}
	for _, policy := range rt.Spec.Template.Spec.VolumeClaimPolicies {
		for _, tmpl := range policy.Templates {
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + tmpl.Name},
				Spec: corev1.PersistentVolumeSpec{
					StorageClassName:              "",
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: tmpl.Spec.Resources.Requests[corev1.ResourceStorage]},
					AccessModes:                   tmpl.Spec.AccessModes,
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns + "-" + tmpl.Name}},
					ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: tmpl.Name + "-" + jobSet},
				},
			}
			Expect(k8s.Create(ctx, pv)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, pv))).To(Succeed()) })
		}
	}
}

func shippedRuntimeEntries() []TableEntry {
	entries := make([]TableEntry, 0, len(shippedRuntimeFiles))
	for _, f := range shippedRuntimeFiles {
		name := filepath.Base(f)
		if data, err := os.ReadFile(f); err == nil {
			shipped := &trainerv1alpha1.ClusterTrainingRuntime{}
			if yaml.Unmarshal(data, shipped) == nil && shipped.Name != "" {
				name = shipped.Name
			}
		}
		entries = append(entries, Entry(name, f))
	}
	return entries
}

// expectTrainJobCondition waits for the TrainJob's condition to be True and
// returns it.
func expectTrainJobCondition(ctx context.Context, tj *trainerv1alpha1.TrainJob, condType string) metav1.Condition {
	GinkgoHelper()
	var cond metav1.Condition
	Eventually(ctx, func(g Gomega) {
		got := &trainerv1alpha1.TrainJob{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, condType)
		g.Expect(c).NotTo(BeNil(), "condition %s: %v", condType, got.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "condition %s: %v", condType, got.Status.Conditions)
		cond = *c
	}).Should(Succeed())
	return cond
}

// torchRuntimeSpec is the spec of the shipped torch-distributed runtime
// (config/runtimes/torch_distributed.yaml).
func torchRuntimeSpec() trainerv1alpha1.TrainingRuntimeSpec {
	GinkgoHelper()
	return shippedRuntimeSpec("torch_distributed.yaml")
}

// shippedRuntimeSpec is the spec of the ClusterTrainingRuntime Gantry ships
// in config/runtimes/file.
func shippedRuntimeSpec(file string) trainerv1alpha1.TrainingRuntimeSpec {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "runtimes", file))
	Expect(err).NotTo(HaveOccurred())
	shipped := &trainerv1alpha1.ClusterTrainingRuntime{}
	Expect(yaml.UnmarshalStrict(data, shipped)).To(Succeed())
	return shipped.Spec
}

// torchRuntimeWithPodAnnotations creates, in ns, a TrainingRuntime that is
// the shipped torch-distributed one with annotations on its node pods (the
// kwok stages read gantry.dev/kwok-run-seconds and gantry.dev/kwok-exit-code)
// and no Job retries, so a failure is final at once. A restartPolicy, if
// given, replaces the one JobSet defaults the node pods to (OnFailure).
func torchRuntimeWithPodAnnotations(ctx context.Context, ns, name string, annotations map[string]string, restart ...corev1.RestartPolicy) *trainerv1alpha1.TrainingRuntime {
	GinkgoHelper()
	rt := &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       torchRuntimeSpec(),
	}
	node := &rt.Spec.Template.Spec.ReplicatedJobs[0]
	node.Template.Spec.BackoffLimit = ptr.To[int32](0)
	node.Template.Spec.Template.Annotations = annotations
	if len(restart) > 0 {
		node.Template.Spec.Template.Spec.RestartPolicy = restart[0]
	}
	createStrict(ctx, rt)
	return rt
}

// trainJobOn is a TrainJob named name on the namespaced runtime rt.
func trainJobOn(rt *trainerv1alpha1.TrainingRuntime, name string) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: rt.Namespace, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{
			Name: rt.Name, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind), APIGroup: ptr.To(trainerv1alpha1.GroupVersion.Group),
		}},
	}
}
