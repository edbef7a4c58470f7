package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/coscheduling"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func newScheme(t testing.TB) *apiruntime.Scheme {
	t.Helper()
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{clientgoscheme.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func newRuntime(t testing.TB, objs ...client.Object) *Runtime {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).Build()
	rt, err := New(Options{Existing: c})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestPluginOrderIsFixed(t *testing.T) {
	rt := newRuntime(t)
	want := []string{"PlainML", "Torch", "MPI", "JAX", "XGBoost", "Flux", "TrainJobStatus", "Coscheduling", "Volcano", "JobSet"}
	for range 3 {
		if diff := cmp.Diff(want, rt.PluginNames()); diff != "" {
			t.Fatalf("plugin order (-want +got):\n%s", diff)
		}
	}
}

func TestNewRequiresExistingReader(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a reader succeeded")
	}
}

// ownerRef is the controller reference every component must carry.
func ownerRef(name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: name, UID: types.UID("uid-" + name),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
}

func indexEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}
}

// expectedJob is the rendered form of trainertesting.ReplicatedJob.
func expectedJob(name, ancestor string, count int32, podLabels map[string]string, containers ...corev1.Container) jobsetv1alpha2.ReplicatedJob {
	rj := trainertesting.ReplicatedJob(name, ancestor, containers...)
	rj.Replicas = 1
	rj.Template.Spec.Parallelism = ptr.To(count)
	rj.Template.Spec.Completions = ptr.To(count)
	rj.Template.Spec.Template.Labels = podLabels
	return rj
}

func expectedJobSet(name string, suspend bool, labels map[string]string, jobs ...jobsetv1alpha2.ReplicatedJob) *jobsetv1alpha2.JobSet {
	l := map[string]string{"app.kubernetes.io/managed-by": "gantry"}
	for k, v := range labels {
		l[k] = v
	}
	return &jobsetv1alpha2.JobSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: l,
			OwnerReferences: ownerRef(name)},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: jobs, Suspend: ptr.To(suspend)},
	}
}

func jobSetOf(t *testing.T, comps []Component) *jobsetv1alpha2.JobSet {
	t.Helper()
	for _, c := range comps {
		if js, ok := c.Object.(*jobsetv1alpha2.JobSet); ok {
			return js
		}
	}
	t.Fatal("no JobSet among the components")
	return nil
}

func TestNewObjectsTorchGolden(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().NumNodes(1).Torch(nil).
		Labels(map[string]string{"trainer.kubeflow.org/framework": "torch"}).
		ReplicatedJob(trainertesting.InitializerJobs()...).
		ReplicatedJob(trainertesting.TrainerJob("torch:2.5")).Obj()
	job := trainertesting.MakeTrainJob("tj", "default").NumNodes(2).Image("torch:custom").Command("torchrun", "train.py").
		Env("LR", "0.1").
		ResourcesPerNode(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, nil).
		DatasetInitializer("hf://org/data", "hf-token").
		ModelInitializer("hf://org/model", "", corev1.EnvVar{Name: "REVISION", Value: "main"}).Obj()

	res, err := newRuntime(t).NewObjects(context.Background(), job, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Components) != 1 {
		t.Fatalf("got %d components, want only the JobSet", len(res.Components))
	}

	dataset := trainertesting.MakeContainer("dataset-initializer", "dataset-initializer:v1").VolumeMount(trainertesting.InitializerVolume, "/workspace").
		Env("STORAGE_URI", "hf://org/data").Obj()
	dataset.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}}}}
	model := trainertesting.MakeContainer("model-initializer", "model-initializer:v1").VolumeMount(trainertesting.InitializerVolume, "/workspace").
		Env("STORAGE_URI", "hf://org/model").Env("REVISION", "main").Obj()
	node := trainertesting.MakeContainer("node", "torch:custom").Command("torchrun", "train.py").
		Resources(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, nil).
		Env("LR", "0.1").Env("PET_NNODES", "2").Env("PET_NPROC_PER_NODE", "4").Obj()
	node.Env = append(node.Env, indexEnv("PET_NODE_RANK"),
		corev1.EnvVar{Name: "PET_MASTER_ADDR", Value: "tj-node-0-0.tj"},
		corev1.EnvVar{Name: "PET_MASTER_PORT", Value: "29500"})
	node.Ports = []corev1.ContainerPort{{ContainerPort: 29500}}

	want := expectedJobSet("tj", false, map[string]string{"trainer.kubeflow.org/framework": "torch"},
		expectedJob("dataset-initializer", "dataset-initializer", 1, nil, dataset),
		expectedJob("model-initializer", "model-initializer", 1, nil, model),
		expectedJob("node", "trainer", 2, nil, node),
	)
	if diff := cmp.Diff(want, jobSetOf(t, res.Components)); diff != "" {
		t.Errorf("JobSet (-want +got):\n%s", diff)
	}
}

// TestNewObjectsTorchTuneCommand: a `tune run` TrainJob's trainer container
// runs the completed command, with the TrainJob's args, and the TrainJob
// itself is not changed.
func TestNewObjectsTorchTuneCommand(t *testing.T) {
	node := trainertesting.MakeContainer("node", "torchtune-trainer:v2.3.0").
		Command("tune", "run", "full_finetune_distributed", "--config", "llama3_2/1B_full", "output_dir=/workspace/output").
		Resources(nil, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}).Obj()
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).
		ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", node)).Obj()
	job := trainertesting.MakeTrainJob("tune", "default").RuntimeRef(trainer.ClusterTrainingRuntimeKind, "torchtune-llama3.2-1b").
		Command("tune", "run").Args("epochs=1").Obj()
	before := job.DeepCopy()
	res, err := newRuntime(t).NewObjects(context.Background(), job, spec)
	if err != nil {
		t.Fatal(err)
	}
	c := jobSetOf(t, res.Components).Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
	want := []string{"tune", "run", "full_finetune_single_device", "--config", "llama3_2/1B_full_single_device", "output_dir=/workspace/output"}
	if diff := cmp.Diff(want, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"epochs=1"}, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, job); diff != "" {
		t.Errorf("the TrainJob changed (-before +after):\n%s", diff)
	}
}

func TestNewObjectsMPIGolden(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().NumNodes(1).MPI(2, false).ReplicatedJob(trainertesting.MPIJobs("mpi:1")...).Obj()
	job := trainertesting.MakeTrainJob("mj", "default").NumNodes(3).Obj()

	res, err := newRuntime(t).NewObjects(context.Background(), job, spec)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range res.Components {
		kinds = append(kinds, c.Object.GetObjectKind().GroupVersionKind().Kind)
	}
	if diff := cmp.Diff([]string{"Secret", "ConfigMap", "JobSet"}, kinds); diff != "" {
		t.Fatalf("component order (-want +got):\n%s", diff)
	}
	if !res.Components[0].CreateOnly || res.Components[1].CreateOnly || res.Components[2].CreateOnly {
		t.Errorf("only the Secret must be create-only: %+v", res.Components)
	}
	secret := res.Components[0].Object.(*corev1.Secret)
	if secret.Name != "mj-mpi-ssh-auth" || !ptr.Deref(secret.Immutable, false) || secret.Type != corev1.SecretTypeSSHAuth {
		t.Errorf("Secret = %s immutable=%v type=%s", secret.Name, secret.Immutable, secret.Type)
	}
	cm := res.Components[1].Object.(*corev1.ConfigMap)
	wantHosts := "mj-node-0-0.mj slots=2\nmj-node-0-1.mj slots=2\nmj-node-0-2.mj slots=2\n"
	if cm.Name != "mj-mpi-hostfile" || cm.Data["hostfile"] != wantHosts {
		t.Errorf("ConfigMap %s hostfile = %q, want %q", cm.Name, cm.Data["hostfile"], wantHosts)
	}
	if diff := cmp.Diff(ownerRef("mj"), cm.OwnerReferences); diff != "" {
		t.Errorf("ConfigMap owner (-want +got):\n%s", diff)
	}

	sshVolume := corev1.Volume{Name: "mpi-ssh-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		// Trainer v2.3's modes (pkg/constants: MPISSHAuthDefaultMode 0o400,
		// MPISSHPrivateKeyFileMode 0o640, MPISSHPublicKeyFileMode 0o644).
		SecretName: "mj-mpi-ssh-auth", DefaultMode: ptr.To[int32](0o400),
		Items: []corev1.KeyToPath{
			{Key: "ssh-privatekey", Path: "id_rsa", Mode: ptr.To[int32](0o640)},
			{Key: "ssh-publickey", Path: "id_rsa.pub", Mode: ptr.To[int32](0o644)},
			{Key: "ssh-publickey", Path: "authorized_keys", Mode: ptr.To[int32](0o644)},
		},
	}}}
	hostfileVolume := corev1.Volume{Name: "mpi-hostfile", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "mj-mpi-hostfile"},
		Items:                []corev1.KeyToPath{{Key: "hostfile", Path: "hostfile", Mode: ptr.To[int32](0o444)}},
	}}}
	worker := trainertesting.MakeContainer("node", "mpi:1").Command("/usr/sbin/sshd", "-De").Obj()
	worker.VolumeMounts = []corev1.VolumeMount{{Name: "mpi-ssh-auth", MountPath: "/root/.ssh"}}
	launcher := trainertesting.MakeContainer("node", "mpi:1").Command("mpirun", "app").
		Env("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile").Env("OMPI_MCA_orte_keep_fqdn_hostnames", "true").
		Env("OMPI_MCA_orte_set_default_slots", "2").Env("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10").Obj()
	launcher.VolumeMounts = []corev1.VolumeMount{{Name: "mpi-ssh-auth", MountPath: "/root/.ssh"}, {Name: "mpi-hostfile", MountPath: "/etc/mpi"}}

	nodeJob := expectedJob("node", "", 3, nil, worker)
	nodeJob.Template.Spec.Template.Spec.Volumes = []corev1.Volume{sshVolume}
	launcherJob := expectedJob("launcher", "trainer", 1, nil, launcher)
	launcherJob.Template.Spec.Template.Spec.Volumes = []corev1.Volume{sshVolume, hostfileVolume}
	want := expectedJobSet("mj", false, nil, nodeJob, launcherJob)
	if diff := cmp.Diff(want, jobSetOf(t, res.Components)); diff != "" {
		t.Errorf("JobSet (-want +got):\n%s", diff)
	}
}

func TestNewObjectsJAXAndXGBoostGolden(t *testing.T) {
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}
	cases := map[string]struct {
		spec    *trainer.TrainingRuntimeSpec
		wantEnv []corev1.EnvVar
	}{
		"jax": {
			spec: trainertesting.MakeRuntimeSpec().JAX().ReplicatedJob(trainertesting.TrainerJob("jax:1")).Obj(),
			wantEnv: []corev1.EnvVar{{Name: "JAX_NUM_PROCESSES", Value: "3"}, indexEnv("JAX_PROCESS_ID"),
				{Name: "JAX_COORDINATOR_ADDRESS", Value: "job-node-0-0.job:29500"}},
		},
		"xgboost with 2 GPUs per node": {
			spec: trainertesting.MakeRuntimeSpec().XGBoost().ReplicatedJob(trainertesting.TrainerJob("xgb:1")).Obj(),
			wantEnv: []corev1.EnvVar{{Name: "DMLC_TRACKER_URI", Value: "job-node-0-0.job"}, {Name: "DMLC_TRACKER_PORT", Value: "29500"},
				indexEnv("DMLC_TASK_ID"), {Name: "DMLC_NUM_WORKER", Value: "6"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainertesting.MakeTrainJob("job", "default").NumNodes(3).ResourcesPerNode(nil, gpu).Obj()
			res, err := newRuntime(t).NewObjects(context.Background(), job, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			image := tc.spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image
			node := trainertesting.MakeContainer("node", image).Resources(nil, gpu).Obj()
			node.Env = tc.wantEnv
			node.Ports = []corev1.ContainerPort{{ContainerPort: 29500}}
			want := expectedJobSet("job", false, nil, expectedJob("node", "trainer", 3, nil, node))
			if diff := cmp.Diff(want, jobSetOf(t, res.Components)); diff != "" {
				t.Errorf("JobSet (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewObjectsCoschedulingWithAndWithoutCRD(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).Coscheduling(ptr.To[int32](30)).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	job := trainertesting.MakeTrainJob("gang", "default").NumNodes(2).Obj()
	withCRD := meta.NewDefaultRESTMapper(nil)
	withCRD.Add(coscheduling.PodGroupGVK, meta.RESTScopeNamespace)

	for name, mapper := range map[string]meta.RESTMapper{"crd installed": withCRD, "crd missing": meta.NewDefaultRESTMapper(nil)} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(newScheme(t)).Build()
			rt, err := New(Options{Existing: c, RESTMapper: mapper})
			if err != nil {
				t.Fatal(err)
			}
			res, err := rt.NewObjects(context.Background(), job, spec)
			if err != nil {
				t.Fatal(err)
			}
			js := jobSetOf(t, res.Components)
			podLabel := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels[coscheduling.PodGroupLabel]
			if name == "crd installed" {
				if len(res.Components) != 2 || res.Components[0].Object.GetObjectKind().GroupVersionKind() != coscheduling.PodGroupGVK {
					t.Errorf("want PodGroup then JobSet, got %d components", len(res.Components))
				}
				if podLabel != "gang" || len(res.Warnings) != 0 {
					t.Errorf("pod label %q, warnings %v", podLabel, res.Warnings)
				}
				return
			}
			if len(res.Components) != 1 || podLabel != "" {
				t.Errorf("without the CRD want only the JobSet and no pod label; got %d components, label %q", len(res.Components), podLabel)
			}
			if diff := cmp.Diff([]string{coscheduling.CRDMissingWarning}, res.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewObjectsErrors(t *testing.T) {
	valid := trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	cases := map[string]struct {
		job             *trainer.TrainJob
		spec            *trainer.TrainingRuntimeSpec
		wantUnsupported bool
	}{
		"nil runtime spec":   {job: trainertesting.MakeTrainJob("a", "default").Obj()},
		"nil TrainJob":       {spec: valid},
		"empty template":     {job: trainertesting.MakeTrainJob("a", "default").Obj(), spec: trainertesting.MakeRuntimeSpec().Torch(nil).Obj()},
		"no trainer step":    {job: trainertesting.MakeTrainJob("a", "default").Image("x").Obj(), spec: trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.InitializerJobs()...).Obj()},
		"reserved torch env": {job: trainertesting.MakeTrainJob("a", "default").Env("PET_NNODES", "9").Obj(), spec: valid},
		"flux without a trainer step": {job: trainertesting.MakeTrainJob("a", "default").Obj(),
			spec: trainertesting.MakeRuntimeSpec().Flux().ReplicatedJob(trainertesting.InitializerJobs()...).Obj()},
		"volcano with an empty queue": {job: trainertesting.MakeTrainJob("a", "default").Obj(),
			spec: trainertesting.MakeRuntimeSpec().Volcano().Annotations(map[string]string{"scheduling.volcano.sh/queue-name": ""}).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()},
		"intel mpi": {job: trainertesting.MakeTrainJob("a", "default").Obj(), wantUnsupported: true,
			spec: trainertesting.MakeRuntimeSpec().MPI(1, false).MPIImplementation(trainer.MPIImplementationIntel).ReplicatedJob(trainertesting.MPIJobs("m")...).Obj()},
		// Without the webhook, these would render a one-node, one-process
		// JobSet, or carry a manager Kueue-style tools cannot match.
		"zero nodes":                     {job: trainertesting.MakeTrainJob("a", "default").NumNodes(0).Obj(), spec: valid},
		"zero processes per node":        {job: trainertesting.MakeTrainJob("a", "default").NumProcPerNode(0).Obj(), spec: valid},
		"patch manager without a domain": {spec: valid, job: trainertesting.MakeTrainJob("a", "default").RuntimePatch("kueue", &trainer.TrainingRuntimeSpecPatch{}).Obj()},
		"patch of a missing job": {spec: valid, job: trainertesting.MakeTrainJob("a", "default").RuntimePatch("kueue", &trainer.TrainingRuntimeSpecPatch{
			Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: "ghost"}}}}}).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := newRuntime(t).NewObjects(context.Background(), tc.job, tc.spec)
			if err == nil {
				t.Fatalf("want an error, got %d components", len(res.Components))
			}
			if !IsBuildError(err) {
				t.Errorf("error %v is not a BuildError", err)
			}
			if got := errors.Is(err, ErrUnsupportedPolicy); got != tc.wantUnsupported {
				t.Errorf("errors.Is(err, ErrUnsupportedPolicy) = %v, want %v (%v)", got, tc.wantUnsupported, err)
			}
			cond := CreatedCondition(err)
			if cond.Status != metav1.ConditionFalse || cond.Reason != trainer.TrainJobJobsBuildFailedReason {
				t.Errorf("Created condition = %s/%s", cond.Status, cond.Reason)
			}
			_, failed := FailedCondition(err)
			if failed != tc.wantUnsupported {
				t.Errorf("FailedCondition ok = %v, want %v", failed, tc.wantUnsupported)
			}
		})
	}
}

func TestNilRuntimeDoesNotPanic(t *testing.T) {
	var rt *Runtime
	if _, err := rt.NewObjects(context.Background(), trainertesting.MakeTrainJob("a", "default").Obj(), nil); err == nil {
		t.Fatal("nil Runtime built objects")
	}
}

func TestNewObjectsLeavesRunningJobSetAlone(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	running := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "default"},
		Spec: jobsetv1alpha2.JobSetSpec{Suspend: ptr.To(false)}}
	cases := map[string]struct {
		existing    []client.Object
		suspendJob  bool
		wantJobSets int
	}{
		"no JobSet yet":                      {wantJobSets: 1},
		"running JobSet, running TrainJob":   {existing: []client.Object{running}},
		"running JobSet, suspending":         {existing: []client.Object{running}, suspendJob: true, wantJobSets: 1},
		"suspended JobSet, resuming TrainJo": {existing: []client.Object{&jobsetv1alpha2.JobSet{ObjectMeta: running.ObjectMeta, Spec: jobsetv1alpha2.JobSetSpec{Suspend: ptr.To(true)}}}, wantJobSets: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainertesting.MakeTrainJob("tj", "default").Suspend(tc.suspendJob).Obj()
			res, err := newRuntime(t, tc.existing...).NewObjects(context.Background(), job, spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Components) != tc.wantJobSets {
				t.Fatalf("got %d components, want %d", len(res.Components), tc.wantJobSets)
			}
			if tc.wantJobSets == 1 && ptr.Deref(jobSetOf(t, res.Components).Spec.Suspend, false) != tc.suspendJob {
				t.Errorf("JobSet suspend = %v, want %v", jobSetOf(t, res.Components).Spec.Suspend, tc.suspendJob)
			}
		})
	}
}

func TestValidateCollectsPluginErrors(t *testing.T) {
	spec := trainertesting.MakeRuntimeSpec().Torch(ptr.To(intstr.FromString("auto"))).ReplicatedJob(trainertesting.TrainerJob("t:1")).Obj()
	job := trainertesting.MakeTrainJob("a", "default").Env("PET_MASTER_ADDR", "x").DatasetInitializer("s3://b", "").Obj()
	errs := newRuntime(t).Validate(nil, job, spec)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	// Torch runs before JobSet, so its error comes first.
	if diff := cmp.Diff([]string{"spec.trainer.env", "spec.runtimeRef"}, fields); diff != "" {
		t.Errorf("error fields (-want +got):\n%s\n%v", diff, errs)
	}
	if errs := newRuntime(t).Validate(nil, job, nil); len(errs) != 1 || errs[0].Field != "spec.runtimeRef" {
		t.Errorf("nil spec: %v", errs)
	}
}
