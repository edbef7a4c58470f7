package webhook

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime"
)

func testRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(runtime.Options{Existing: fake.NewClientBuilder().WithScheme(trainerScheme(t)).Build()})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestRuntimeSamplesAdmitted(t *testing.T) {
	rt := testRuntime(t)
	for _, f := range []string{
		"config/samples/trainer_v1alpha1_clustertrainingruntime.yaml",
		"config/runtimes/torch_distributed.yaml",
		"config/runtimes/deepspeed_distributed.yaml",
		"config/runtimes/mpi_distributed.yaml",
		"config/runtimes/jax_distributed.yaml",
		"config/runtimes/xgboost_distributed.yaml",
	} {
		t.Run(f, func(t *testing.T) {
			ctr := decodeFile[trainer.ClusterTrainingRuntime](t, f)
			withServerDefaults(&ctr.Spec)
			warnings, err := (&ClusterTrainingRuntimeValidator{Runtime: rt}).ValidateCreate(context.Background(), &ctr)
			checkAdmission(t, err, "")
			if len(warnings) > 0 {
				t.Errorf("unexpected warnings: %v", warnings)
			}
		})
	}
	t.Run("config/samples/trainer_v1alpha1_trainingruntime.yaml", func(t *testing.T) {
		tr := decodeFile[trainer.TrainingRuntime](t, "config/samples/trainer_v1alpha1_trainingruntime.yaml")
		withServerDefaults(&tr.Spec)
		_, err := (&TrainingRuntimeValidator{Runtime: rt}).ValidateCreate(context.Background(), &tr)
		checkAdmission(t, err, "")
	})
}

func TestRuntimeValidator(t *testing.T) {
	torch := func(t *testing.T) *trainer.ClusterTrainingRuntime {
		ctr := decodeFile[trainer.ClusterTrainingRuntime](t, "config/runtimes/torch_distributed.yaml")
		withServerDefaults(&ctr.Spec)
		return &ctr
	}
	mpi := func(t *testing.T) *trainer.ClusterTrainingRuntime {
		ctr := decodeFile[trainer.ClusterTrainingRuntime](t, "config/runtimes/mpi_distributed.yaml")
		withServerDefaults(&ctr.Spec)
		return &ctr
	}
	node := func(s *trainer.TrainingRuntimeSpec) *jobsetv1alpha2.ReplicatedJob {
		return &s.Template.Spec.ReplicatedJobs[0]
	}
	tests := []struct {
		name       string
		runtime    func(*testing.T) *trainer.ClusterTrainingRuntime
		mutate     func(*trainer.TrainingRuntimeSpec)
		want       string
		warning    string
		noWarnings bool
	}{
		{
			name: "no replicated jobs", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) { s.Template.Spec.ReplicatedJobs = nil },
			want:   "spec.template.spec.replicatedJobs: Required value: a runtime needs at least one replicated job",
		},
		{
			name: "trainer step with two replicas", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) { node(s).Replicas = 2 },
			want:   "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1",
		},
		{
			name: "trainer step without a node container", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				node(s).Template.Spec.Template.Spec.Containers[0].Name = "trainer"
			},
			want: `spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid value: ["trainer"]: must contain the required container for the ancestor: trainer`,
		},
		{
			name: "dataset step without its container", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				init := node(s).DeepCopy()
				init.Name = "dataset-initializer"
				init.Template.Labels[trainer.LabelTrainJobAncestor] = trainer.AncestorDatasetInitializer
				s.Template.Spec.ReplicatedJobs = append([]jobsetv1alpha2.ReplicatedJob{*init}, s.Template.Spec.ReplicatedJobs...)
			},
			want: `spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid value: ["node"]: must contain the required container for the ancestor: dataset-initializer`,
		},
		{
			name: "two trainer steps", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				second := node(s).DeepCopy()
				second.Name = "node2"
				s.Template.Spec.ReplicatedJobs = append(s.Template.Spec.ReplicatedJobs, *second)
			},
			want: `spec.template.spec.replicatedJobs[1].template.metadata.labels[trainer.kubeflow.org/trainjob-ancestor-step]: Duplicate value: "trainer": replicated job "node" is already the trainer step`,
		},
		{
			name: "zero nodes", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.NumNodes = ptr.To[int32](0) },
			want:   "spec.mlPolicy.numNodes: Invalid value: 0: must be greater than or equal to 1",
		},
		{
			name: "two policies", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.JAX = &trainer.JAXMLPolicySource{} },
			want:   "spec.mlPolicy: Forbidden: Only one of the policy can be configured",
		},
		{
			// Trainer v2.3's CRD rule, repeated for clusters whose CRD predates it.
			name: "torch envInjection naming the node container", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.Torch.EnvInjection = &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{
					{JobName: "node", ContainerNames: []string{"node"}},
				}}
			},
			want: `spec.mlPolicy.torch.envInjection.targets[node].containerNames: Invalid value: ["node"]: containerNames must not include the main node container`,
		},
		{
			name: "torch envInjection target without containerNames", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.Torch.EnvInjection = &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{{JobName: "node"}}}
			},
			want: `spec.mlPolicy.torch.envInjection.targets[node].containerNames: Required value`,
		},
		{
			name: "torch processes per node zero", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.Torch.NumProcPerNode = ptr.To(intstr.FromInt32(0)) },
			want:   "spec.mlPolicy.torch.numProcPerNode: Invalid value: 0: must be a positive integer, auto, cpu or gpu",
		},
		{
			name: "torch processes per node unknown word", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.Torch.NumProcPerNode = ptr.To(intstr.FromString("tpu"))
			},
			want: `spec.mlPolicy.torch.numProcPerNode: Unsupported value: "tpu": supported values: "auto", "cpu", "gpu", "a positive integer"`,
		},
		{
			name: "torch processes per node gpu", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.Torch.NumProcPerNode = ptr.To(intstr.FromString("gpu"))
			},
		},
		{
			name: "torch env injection into a missing container", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.Torch.EnvInjection = &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{{JobName: "node", ContainerNames: []string{"preflight"}}}}
			},
			want: `spec.mlPolicy.torch.envInjection.targets[node].containerNames: Not found: "preflight"`,
		},
		{
			name: "mpi zero slots", runtime: mpi,
			mutate: func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.MPI.NumProcPerNode = ptr.To[int32](0) },
			want:   "spec.mlPolicy.mpi.numProcPerNode: Invalid value: 0: must be greater than or equal to 1",
		},
		{
			name: "mpi relative ssh path", runtime: mpi,
			mutate: func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.MPI.SSHAuthMountPath = ptr.To(".ssh") },
			want:   `spec.mlPolicy.mpi.sshAuthMountPath: Invalid value: ".ssh": must be an absolute path`,
		},
		{
			name: "mpi without launcher or node job", runtime: mpi,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				for i := range s.Template.Spec.ReplicatedJobs {
					s.Template.Spec.ReplicatedJobs[i].Name += "-x"
				}
			},
			want: `spec.template.spec.replicatedJobs: Invalid value: an MPI runtime needs a "launcher" or a "node" replicated job`,
		},
		{
			name: "flux is admitted without a warning", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy = &trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{Flux: &trainer.FluxMLPolicySource{NumProcPerNode: ptr.To[int32](1)}}}
			},
			noWarnings: true,
		},
		{
			name: "volcano is admitted without a warning", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Volcano: &trainer.VolcanoPodGroupPolicySource{}}}
			},
			noWarnings: true,
		},
		{
			name: "flux with an init container of the installer's name", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy = &trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{Flux: &trainer.FluxMLPolicySource{}}}
				node(s).Template.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "flux-installer", Image: "x"}}
			},
			want: `spec.template.spec.replicatedJobs: Invalid value: the trainer step's init container "flux-installer" is reserved for the Flux policy`,
		},
		{
			// testRuntime's gate is off: admitted, but its jobs are refused.
			name: "elastic torch with the gate off", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.Torch.ElasticPolicy = &trainer.TorchElasticPolicy{MinNodes: 1, MaxNodes: 2}
			},
			warning: "spec.mlPolicy.torch.elasticPolicy: the manager's TrainJobElasticPyTorch feature gate is off; TrainJobs that reference this runtime are rejected",
		},
		{
			// The CRD's rule, repeated for clusters whose CRD predates it.
			name: "flux without processes", runtime: torch,
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy = &trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{Flux: &trainer.FluxMLPolicySource{NumProcPerNode: ptr.To[int32](0)}}}
			},
			want: "spec.mlPolicy.flux.numProcPerNode: Invalid value: 0: must be greater than or equal to 1",
		},
	}
	rt := testRuntime(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctr := tc.runtime(t)
			tc.mutate(&ctr.Spec)
			warnings, err := (&ClusterTrainingRuntimeValidator{Runtime: rt}).ValidateCreate(context.Background(), ctr)
			checkAdmission(t, err, tc.want)
			if tc.warning != "" && !strings.Contains(strings.Join(warnings, "\n"), tc.warning) {
				t.Errorf("warnings %v lack %q", warnings, tc.warning)
			}
			if tc.noWarnings && len(warnings) > 0 {
				t.Errorf("warnings %v, want none", warnings)
			}
			// The namespaced kind applies the same rules.
			tr := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: ctr.Name, Namespace: testNamespace}, Spec: ctr.Spec}
			_, err = (&TrainingRuntimeValidator{Runtime: rt}).ValidateCreate(context.Background(), tr)
			checkAdmission(t, err, tc.want)
		})
	}
}

func TestRuntimeUpdate(t *testing.T) {
	rt := testRuntime(t)
	ctr := decodeFile[trainer.ClusterTrainingRuntime](t, "config/runtimes/torch_distributed.yaml")
	withServerDefaults(&ctr.Spec)
	broken := ctr.DeepCopy()
	broken.Spec.Template.Spec.ReplicatedJobs[0].Replicas = 3

	v := &ClusterTrainingRuntimeValidator{Runtime: rt}
	_, err := v.ValidateUpdate(context.Background(), &ctr, broken)
	checkAdmission(t, err, "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 3")

	// A runtime stored before the webhook existed still takes finalizers.
	withFinalizer := broken.DeepCopy()
	withFinalizer.Finalizers = []string{trainer.ResourceInUseFinalizer}
	_, err = v.ValidateUpdate(context.Background(), broken, withFinalizer)
	checkAdmission(t, err, "")

	deprecated := ctr.DeepCopy()
	deprecated.Labels[labelSupport] = supportDeprecated
	warnings, err := v.ValidateCreate(context.Background(), deprecated)
	checkAdmission(t, err, "")
	if len(warnings) != 1 || !strings.Contains(warnings[0], "is deprecated") {
		t.Errorf("warnings = %v, want the deprecation warning", warnings)
	}
}

// TestRuntimeContainerNamesInMessages keeps the container list readable:
// names, not whole container objects.
func TestRuntimeContainerNamesInMessages(t *testing.T) {
	spec := &trainer.TrainingRuntimeSpec{Template: trainer.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
		ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: "node", Replicas: 1,
			Template: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainer.LabelTrainJobAncestor: trainer.AncestorTrainer}},
			},
		}},
	}}}
	spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers = []corev1.Container{{Name: "a", Image: strings.Repeat("x", 100)}}
	errs := validateReplicatedJobs(spec)
	if len(errs) != 1 || strings.Contains(errs[0].Error(), "xxxx") {
		t.Fatalf("errs = %v", errs)
	}
}

// TestShippedRuntimeImagesArePinned: every image of the shipped runtimes
// names a tag (never latest), as Trainer v2.3's runtime overlay pins its
// own images to the release.
func TestShippedRuntimeImagesArePinned(t *testing.T) {
	files, err := filepath.Glob(repoFile("config/runtimes/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no runtimes found: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		rel, _ := filepath.Rel(repoFile("."), f)
		ctr := decodeFile[trainer.ClusterTrainingRuntime](t, rel)
		for _, rj := range ctr.Spec.Template.Spec.ReplicatedJobs {
			pod := rj.Template.Spec.Template.Spec
			for _, c := range append(pod.InitContainers, pod.Containers...) {
				// A registry port ("host:5000/x") is not a tag.
				_, tag, ok := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":")
				if !ok || tag == "" || tag == "latest" {
					t.Errorf("%s: %s container %s has image %q without a pinned tag", rel, rj.Name, c.Name, c.Image)
				}
			}
		}
	}
}
