package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime"
)

const testNamespace = "default"

func trainerScheme(t *testing.T) *apiruntime.Scheme {
	t.Helper()
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{clientgoscheme.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// trainJobValidator serves the sample runtimes (torch-distributed and
// xgboost-distributed ClusterTrainingRuntimes, the mpi-distributed
// TrainingRuntime in testNamespace, an Intel MPI runtime) plus objs.
func trainJobValidator(t *testing.T, objs ...client.Object) *TrainJobValidator {
	t.Helper()
	torch := decodeFile[trainer.ClusterTrainingRuntime](t, "config/samples/trainer_v1alpha1_clustertrainingruntime.yaml")
	xgb := decodeFile[trainer.ClusterTrainingRuntime](t, "config/runtimes/xgboost_distributed.yaml")
	mpi := decodeFile[trainer.TrainingRuntime](t, "config/samples/trainer_v1alpha1_trainingruntime.yaml")
	mpi.Namespace = testNamespace
	intelMPI := torch.DeepCopy()
	intelMPI.Name = "intel-mpi"
	intelMPI.Spec.MLPolicy = &trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{
		MPI: &trainer.MPIMLPolicySource{MPIImplementation: ptr.To(trainer.MPIImplementationIntel)}}}
	objs = append(objs, &torch, &xgb, &mpi, intelMPI)
	c := fake.NewClientBuilder().WithScheme(trainerScheme(t)).WithObjects(objs...).Build()
	rt, err := runtime.New(runtime.Options{Existing: c})
	if err != nil {
		t.Fatal(err)
	}
	return &TrainJobValidator{Runtime: rt, Reader: c}
}

func sampleTrainJob(t *testing.T) *trainer.TrainJob {
	job := decodeFile[trainer.TrainJob](t, "config/samples/trainer_v1alpha1_trainjob.yaml")
	job.Namespace = testNamespace
	job.Spec.RuntimeRef.APIGroup = ptr.To(trainer.GroupVersion.Group)
	job.Spec.RuntimeRef.Kind = ptr.To(trainer.ClusterTrainingRuntimeKind)
	return &job
}

func patch(manager string, rJob string, containers ...trainer.ContainerPatch) trainer.RuntimePatch {
	return trainer.RuntimePatch{
		Manager: manager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
			ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: rJob, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
				Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{
					Containers:   containers,
					NodeSelector: map[string]string{"pool": "a"},
				}},
			}}}},
		}}},
	}
}

func TestTrainJobValidateCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*trainer.TrainJob)
		want   string
	}{
		{name: "sample", mutate: func(*trainer.TrainJob) {}},
		{
			name: "namespaced runtime",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.RuntimeRef = trainer.RuntimeRef{Name: "mpi-distributed", Kind: ptr.To(trainer.TrainingRuntimeKind)}
				j.Spec.Trainer = nil
			},
		},
		{
			name:   "missing cluster runtime",
			mutate: func(j *trainer.TrainJob) { j.Spec.RuntimeRef.Name = "missing" },
			want:   `spec.runtimeRef: Not found: "missing": specified ClusterTrainingRuntime must be created before the TrainJob is created`,
		},
		{
			name: "namespaced runtime in another namespace",
			mutate: func(j *trainer.TrainJob) {
				j.Namespace = "other"
				j.Spec.RuntimeRef = trainer.RuntimeRef{Name: "mpi-distributed", Kind: ptr.To(trainer.TrainingRuntimeKind)}
			},
			want: `spec.runtimeRef: Not found: "mpi-distributed": specified TrainingRuntime must be created`,
		},
		{
			name:   "foreign apiGroup",
			mutate: func(j *trainer.TrainJob) { j.Spec.RuntimeRef.APIGroup = ptr.To("example.com") },
			want:   `spec.runtimeRef.apiGroup: Unsupported value: "example.com": supported values: "trainer.kubeflow.org"`,
		},
		{
			name:   "unknown kind",
			mutate: func(j *trainer.TrainJob) { j.Spec.RuntimeRef.Kind = ptr.To("Runtime") },
			want:   `spec.runtimeRef.kind: Unsupported value: "Runtime"`,
		},
		{
			name:   "zero nodes",
			mutate: func(j *trainer.TrainJob) { j.Spec.Trainer.NumNodes = ptr.To[int32](0) },
			want:   "spec.trainer.numNodes: Invalid value: 0: must be greater than or equal to 1",
		},
		{
			name:   "zero processes per node",
			mutate: func(j *trainer.TrainJob) { j.Spec.Trainer.NumProcPerNode = ptr.To[int32](0) },
			want:   "spec.trainer.numProcPerNode: Invalid value: 0: must be greater than or equal to 1",
		},
		{
			name:   "torchrun variable",
			mutate: func(j *trainer.TrainJob) { j.Spec.Trainer.Env = []corev1.EnvVar{{Name: "PET_NNODES", Value: "4"}} },
			want:   `spec.trainer.env: Invalid value: ["PET_NNODES"]: must not set the torchrun variables`,
		},
		{
			name: "xgboost variable",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.RuntimeRef.Name = "xgboost-distributed"
				j.Spec.Trainer.Env = []corev1.EnvVar{{Name: "DMLC_NUM_WORKER", Value: "4"}}
			},
			want: "spec.trainer.env[0]: Forbidden: DMLC_NUM_WORKER is set by the XGBoost runtime",
		},
		{
			name: "OpenMPI variable the MPI runtime sets",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.RuntimeRef = trainer.RuntimeRef{Name: "mpi-distributed", Kind: ptr.To(trainer.TrainingRuntimeKind)}
				j.Spec.Trainer.Env = []corev1.EnvVar{{Name: "OMPI_MCA_btl", Value: "tcp,self"}, {Name: "OMPI_MCA_orte_set_default_slots", Value: "4"}}
			},
			want: "spec.trainer.env[1]: Forbidden: OMPI_MCA_orte_set_default_slots is set by the MPI runtime",
		},
		{
			name: "OpenMPI variables the MPI runtime leaves to the user",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.RuntimeRef = trainer.RuntimeRef{Name: "mpi-distributed", Kind: ptr.To(trainer.TrainingRuntimeKind)}
				j.Spec.Trainer.Env = []corev1.EnvVar{{Name: "OMPI_MCA_btl", Value: "tcp,self"}}
			},
		},
		{
			name: "dataset initializer the runtime lacks",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.Initializer = &trainer.Initializer{Dataset: &trainer.DatasetInitializer{StorageURI: ptr.To("hf://org/data")}}
			},
			want: "the runtime must have a replicated job labelled trainer.kubeflow.org/trainjob-ancestor-step=dataset-initializer",
		},
		{
			name: "patch of a job the runtime lacks",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.RuntimePatches = []trainer.RuntimePatch{patch("example.com/user", "workers")}
			},
			want: `spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[workers]: Not found: "workers"`,
		},
		{
			name: "env patch of the node container",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.RuntimePatches = []trainer.RuntimePatch{patch("example.com/user", "node",
					trainer.ContainerPatch{Name: "node", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}})}
			},
			want: "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[node].template.spec.template.spec.containers[node].env: Forbidden",
		},
		{
			name:   "patch manager without a domain",
			mutate: func(j *trainer.TrainJob) { j.Spec.RuntimePatches = []trainer.RuntimePatch{patch("kueue", "node")} },
			want:   `spec.runtimePatches[0].manager: Invalid value: "kueue": must be a domain-prefixed path`,
		},
		{
			name: "valid patch",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.RuntimePatches = []trainer.RuntimePatch{patch("kueue.x-k8s.io/manager", "node")}
			},
		},
		{
			name:   "runtime with a policy Gantry cannot run",
			mutate: func(j *trainer.TrainJob) { j.Spec.RuntimeRef.Name = "intel-mpi" },
			want:   "spec.runtimeRef: Invalid value:",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := sampleTrainJob(t)
			tc.mutate(job)
			_, err := trainJobValidator(t).ValidateCreate(context.Background(), job)
			checkAdmission(t, err, tc.want)
		})
	}
}

func TestTrainJobValidateUpdate(t *testing.T) {
	activeJobSet := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pytorch-mnist", Namespace: testNamespace},
		Status: jobsetv1alpha2.JobSetStatus{ReplicatedJobsStatus: []jobsetv1alpha2.ReplicatedJobStatus{
			{Name: "node", Active: 1},
		}},
	}
	tests := []struct {
		name     string
		mutate   func(old, new *trainer.TrainJob)
		existing []client.Object
		want     string
	}{
		{name: "no change", mutate: func(_, _ *trainer.TrainJob) {}},
		{
			name:   "suspend",
			mutate: func(_, n *trainer.TrainJob) { n.Spec.Suspend = ptr.To(true) },
		},
		{
			name:   "runtimeRef",
			mutate: func(_, n *trainer.TrainJob) { n.Spec.RuntimeRef.Name = "xgboost-distributed" },
			want:   "spec.runtimeRef: Invalid value: ",
		},
		{
			name:   "trainer",
			mutate: func(_, n *trainer.TrainJob) { n.Spec.Trainer.Image = ptr.To("example.com/other:v2") },
			want:   "spec.trainer: Invalid value: ",
		},
		{
			// Only elastic jobs resize (TestElasticTrainJobResize).
			name:   "trainer numNodes on a static runtime",
			mutate: func(_, n *trainer.TrainJob) { n.Spec.Trainer.NumNodes = ptr.To[int32](3) },
			want:   "spec.trainer.numNodes: Forbidden: field is immutable: numNodes may change only for a job on a runtime with mlPolicy.torch.elasticPolicy",
		},
		{
			name: "runtime patches of a running job",
			mutate: func(_, n *trainer.TrainJob) {
				n.Spec.RuntimePatches = []trainer.RuntimePatch{patch("kueue.x-k8s.io/manager", "node")}
			},
			want: "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended before or after the update",
		},
		{
			name: "runtime patches while suspending, no JobSet yet",
			mutate: func(_, n *trainer.TrainJob) {
				n.Spec.Suspend = ptr.To(true)
				n.Spec.RuntimePatches = []trainer.RuntimePatch{patch("kueue.x-k8s.io/manager", "node")}
			},
		},
		{
			name: "runtime patches while the JobSet still runs",
			mutate: func(o, n *trainer.TrainJob) {
				o.Spec.Suspend = ptr.To(true)
				n.Spec.Suspend = ptr.To(true)
				n.Spec.RuntimePatches = []trainer.RuntimePatch{patch("kueue.x-k8s.io/manager", "node")}
			},
			existing: []client.Object{activeJobSet},
			want:     "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob node is still active",
		},
		{
			name: "runtime deleted after the job was created",
			mutate: func(o, n *trainer.TrainJob) {
				o.Spec.RuntimeRef.Name, n.Spec.RuntimeRef.Name = "gone", "gone"
				n.Labels = map[string]string{"team": "a"}
			},
		},
		{
			name: "job being deleted",
			mutate: func(_, n *trainer.TrainJob) {
				n.Spec.RuntimePatches = []trainer.RuntimePatch{patch("kueue", "node")}
				n.DeletionTimestamp = ptr.To(metav1.Now())
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldJob, newJob := sampleTrainJob(t), sampleTrainJob(t)
			tc.mutate(oldJob, newJob)
			_, err := trainJobValidator(t, tc.existing...).ValidateUpdate(context.Background(), oldJob, newJob)
			checkAdmission(t, err, tc.want)
		})
	}
}

func TestTrainJobDefaulter(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	d := &TrainJobDefaulter{Clock: clocktesting.NewFakePassiveClock(now)}

	t.Run("create", func(t *testing.T) {
		job := &trainer.TrainJob{Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "torch-distributed"},
			RuntimePatches: []trainer.RuntimePatch{
				{Manager: "example.com/a"},
				{Manager: "example.com/b", Time: &earlier},
			},
		}}
		if err := d.Default(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		if ptr.Deref(job.Spec.RuntimeRef.APIGroup, "") != "trainer.kubeflow.org" || ptr.Deref(job.Spec.RuntimeRef.Kind, "") != "ClusterTrainingRuntime" {
			t.Errorf("runtimeRef not defaulted: %+v", job.Spec.RuntimeRef)
		}
		if got := job.Spec.RuntimePatches[0].Time; got == nil || !got.Time.Equal(now) {
			t.Errorf("new patch: time %v, want %v", got, now)
		}
		if got := job.Spec.RuntimePatches[1].Time; !got.Equal(&earlier) {
			t.Errorf("patch with a time: %v, want it kept", got)
		}
	})

	t.Run("update", func(t *testing.T) {
		old := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimePatches: []trainer.RuntimePatch{
			{Manager: "example.com/same", Time: &earlier},
			{Manager: "example.com/changed", Time: &earlier},
		}}}
		changed := patch("example.com/changed", "node")
		job := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimePatches: []trainer.RuntimePatch{
			{Manager: "example.com/same"}, // the client dropped the time
			changed,
			{Manager: "example.com/new"},
		}}}
		raw, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, OldObject: apiruntime.RawExtension{Raw: raw},
		}})
		if err := d.Default(ctx, job); err != nil {
			t.Fatal(err)
		}
		want := []time.Time{earlier.Time, now, now}
		for i, p := range job.Spec.RuntimePatches {
			if p.Time == nil || !p.Time.Time.Equal(want[i]) {
				t.Errorf("%s: time %v, want %v", p.Manager, p.Time, want[i])
			}
		}
	})
}

// Trainer v2.3 admits a TrainJob with a dataset or model initializer only
// when the runtime's initializer container mounts the "initializer" volume.
func TestTrainJobInitializerVolumeMount(t *testing.T) {
	shipped := decodeFile[trainer.ClusterTrainingRuntime](t, "config/runtimes/torchtune_llama3_2_1b.yaml")
	unmounted := shipped.DeepCopy()
	unmounted.Name = "unmounted"
	for i := range unmounted.Spec.Template.Spec.ReplicatedJobs {
		rJob := &unmounted.Spec.Template.Spec.ReplicatedJobs[i]
		if rJob.Name == trainer.DatasetInitializerName {
			rJob.Template.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "scratch"
		}
	}
	v := trainJobValidator(t, &shipped, unmounted)
	for _, tc := range []struct {
		name, runtime string
		init          *trainer.Initializer
		want          string
	}{
		{name: "shipped runtime", runtime: shipped.Name,
			init: &trainer.Initializer{Dataset: &trainer.DatasetInitializer{StorageURI: ptr.To("hf://org/data")}}},
		{name: "dataset container without the mount", runtime: unmounted.Name,
			init: &trainer.Initializer{Dataset: &trainer.DatasetInitializer{StorageURI: ptr.To("hf://org/data")}},
			want: `spec.runtimeRef: Invalid value:`},
		{name: "only the model, whose container mounts it", runtime: unmounted.Name,
			init: &trainer.Initializer{Model: &trainer.ModelInitializer{StorageURI: ptr.To("hf://org/model")}}},
		{name: "no initializer", runtime: unmounted.Name},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := sampleTrainJob(t)
			job.Spec.RuntimeRef.Name = tc.runtime
			job.Spec.Initializer = tc.init
			_, err := v.ValidateCreate(context.Background(), job)
			checkAdmission(t, err, tc.want)
			if tc.want != "" && err != nil && !strings.Contains(err.Error(), `must mount the volume "initializer" in its dataset-initializer container`) {
				t.Errorf("the error does not say which mount is missing: %v", err)
			}
		})
	}
}

// An elastic job may change spec.trainer.numNodes within its runtime's
// bounds, and only with the gate on; no other field of spec.trainer.
func TestElasticTrainJobResize(t *testing.T) {
	elastic := decodeFile[trainer.ClusterTrainingRuntime](t, "config/samples/trainer_v1alpha1_clustertrainingruntime.yaml")
	elastic.Name = "torch-elastic"
	elastic.Spec.MLPolicy.Torch.ElasticPolicy = &trainer.TorchElasticPolicy{MinNodes: 1, MaxNodes: 4}
	validator := func(gate bool) *TrainJobValidator {
		c := fake.NewClientBuilder().WithScheme(trainerScheme(t)).WithObjects(&elastic).Build()
		rt, err := runtime.New(runtime.Options{Existing: c, ElasticPyTorch: gate})
		if err != nil {
			t.Fatal(err)
		}
		return &TrainJobValidator{Runtime: rt, Reader: c}
	}
	job := func(nodes int32) *trainer.TrainJob {
		j := sampleTrainJob(t)
		j.Spec.RuntimeRef.Name = elastic.Name
		j.Spec.Trainer.NumNodes = ptr.To(nodes)
		return j
	}
	cases := []struct {
		name     string
		gate     bool
		old, new *trainer.TrainJob
		want     string
	}{
		{name: "grow", gate: true, old: job(2), new: job(3)},
		{name: "shrink", gate: true, old: job(2), new: job(1)},
		{name: "beyond maxNodes", gate: true, old: job(2), new: job(5), want: "spec.trainer.numNodes: Invalid value: 5: must be between the runtime's elasticPolicy.minNodes (1) and maxNodes (4)"},
		{name: "gate off", old: job(2), new: job(3), want: "TrainJobElasticPyTorch feature gate (off)"},
		{name: "image with numNodes", gate: true, old: job(2), new: func() *trainer.TrainJob { j := job(3); j.Spec.Trainer.Image = ptr.To("x:2"); return j }(), want: "spec.trainer: Invalid value: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := validator(tc.gate).ValidateUpdate(context.Background(), tc.old, tc.new)
			checkAdmission(t, err, tc.want)
		})
	}
	t.Run("create with the gate off", func(t *testing.T) {
		_, err := validator(false).ValidateCreate(context.Background(), job(2))
		checkAdmission(t, err, "runtime torch-elastic has mlPolicy.torch.elasticPolicy, which needs the manager's TrainJobElasticPyTorch feature gate (off)")
	})
}
