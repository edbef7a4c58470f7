package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
)

// One control plane serves all subtests: starting kube-apiserver dominates
// the run time, and the subtests use distinct object names.
func TestTrainerCRDsOnAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*apiruntime.Scheme) error{trainer.AddToScheme}})
	c := env.Client
	ctx := t.Context()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "trainer-crd-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}

	t.Run("samples are accepted and defaulted like upstream", func(t *testing.T) {
		testSamples(ctx, t, c, ns.Name)
	})
	t.Run("invalid objects are rejected", func(t *testing.T) {
		testRejectedOnCreate(ctx, t, c, ns.Name)
	})
	t.Run("immutable fields cannot change", func(t *testing.T) {
		testImmutableFields(ctx, t, c, ns.Name)
	})
	t.Run("status is a subresource", func(t *testing.T) {
		testStatusSubresource(ctx, t, c, ns.Name)
	})
	t.Run("kubectl get shows state and runtime", func(t *testing.T) {
		testPrintColumns(ctx, t, env.Config, c, ns.Name)
	})
	t.Run("kubectl explain trainjob.spec describes the fields", func(t *testing.T) {
		testExplain(ctx, t, env.Config)
	})
}

// testExplain reads the TrainJob schema the API server publishes in
// OpenAPI v3, what `kubectl explain` shows: the kind's own fields carry
// descriptions (the CRDs were generated without any before).
func testExplain(ctx context.Context, t *testing.T, cfg *rest.Config) {
	missing, err := testenv.UndescribedFields(ctx, cfg, "trainer.kubeflow.org", "v1alpha1", "TrainJob",
		"spec", "spec.runtimeRef", "spec.trainer", "spec.trainer.numNodes", "spec.suspend", "status.conditions",
		"spec.ttlSecondsAfterFinished", "status.startTime", "status.completionTime")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range missing {
		t.Errorf("trainjob.%s has no description", f)
	}
}

func testSamples(ctx context.Context, t *testing.T, c client.Client, ns string) {
	// Samples go in as raw manifests, not typed objects, so the test sees
	// exactly what `kubectl apply -f` would send.
	applySample(ctx, t, c, "trainer_v1alpha1_clustertrainingruntime.yaml", "")
	applySample(ctx, t, c, "trainer_v1alpha1_trainingruntime.yaml", ns)
	applySample(ctx, t, c, "trainer_v1alpha1_trainjob.yaml", ns)

	var ctr trainer.ClusterTrainingRuntime
	mustGet(ctx, t, c, client.ObjectKey{Name: "torch-distributed"}, &ctr)
	if ctr.Spec.MLPolicy == nil || ctr.Spec.MLPolicy.Torch == nil {
		t.Fatalf("torch policy lost: %+v", ctr.Spec.MLPolicy)
	}
	rjobs := ctr.Spec.Template.Spec.ReplicatedJobs
	if len(rjobs) != 1 || rjobs[0].Template.Labels[trainer.LabelTrainJobAncestor] != trainer.AncestorTrainer {
		// The ancestor label lives in embedded ObjectMeta; without
		// generateEmbeddedObjectMeta the API server would prune it.
		t.Errorf("replicated job template labels not preserved: %+v", rjobs)
	}

	var mpiRuntime trainer.TrainingRuntime
	mustGet(ctx, t, c, client.ObjectKey{Namespace: ns, Name: "mpi-distributed"}, &mpiRuntime)
	mpi := mpiRuntime.Spec.MLPolicy.MPI
	if mpi == nil {
		t.Fatal("mpi policy lost")
	}
	checkEqual(t, "mpi.numProcPerNode", ptr.Deref(mpi.NumProcPerNode, 0), int32(1))
	checkEqual(t, "mpi.mpiImplementation", ptr.Deref(mpi.MPIImplementation, ""), trainer.MPIImplementationOpenMPI)
	checkEqual(t, "mpi.runLauncherAsNode", ptr.Deref(mpi.RunLauncherAsNode, true), false)
	checkEqual(t, "mpi.sshAuthMountPath", ptr.Deref(mpi.SSHAuthMountPath, ""), "/home/mpiuser/.ssh")
	if pg := mpiRuntime.Spec.PodGroupPolicy; pg == nil || pg.Coscheduling == nil {
		t.Errorf("coscheduling policy lost: %+v", pg)
	} else {
		checkEqual(t, "coscheduling.scheduleTimeoutSeconds", ptr.Deref(pg.Coscheduling.ScheduleTimeoutSeconds, 0), int32(60))
	}

	var job trainer.TrainJob
	mustGet(ctx, t, c, client.ObjectKey{Namespace: ns, Name: "pytorch-mnist"}, &job)
	checkEqual(t, "runtimeRef.apiGroup", ptr.Deref(job.Spec.RuntimeRef.APIGroup, ""), "trainer.kubeflow.org")
	checkEqual(t, "runtimeRef.kind", ptr.Deref(job.Spec.RuntimeRef.Kind, ""), trainer.ClusterTrainingRuntimeKind)
	checkEqual(t, "suspend", ptr.Deref(job.Spec.Suspend, true), false)
	checkEqual(t, "managedBy", ptr.Deref(job.Spec.ManagedBy, ""), trainer.TrainJobControllerManagedBy)
	checkEqual(t, "trainer.numNodes", ptr.Deref(job.Spec.Trainer.NumNodes, 0), int32(2))
	if cpus := job.Spec.Trainer.ResourcesPerNode.Requests["cpu"]; cpus.Value() != 1 {
		t.Errorf("trainer.resourcesPerNode CPU request = %s, want 1", cpus.String())
	}
}

func testRejectedOnCreate(ctx context.Context, t *testing.T, c client.Client, ns string) {
	cases := []struct {
		name    string
		obj     client.Object
		wantErr string // empty: the object must be accepted
	}{
		{
			name:    "TrainJob name of 64 characters",
			obj:     newTrainJob(ns, strings.Repeat("a", 64)),
			wantErr: "no more than 63 characters",
		},
		{
			name: "TrainJob name of exactly 63 characters",
			obj:  newTrainJob(ns, strings.Repeat("b", 63)),
		},
		{
			name:    "TrainJob name starting with a digit",
			obj:     newTrainJob(ns, "1-job"),
			wantErr: "RFC 1035",
		},
		{
			name:    "TrainJob name with a dot",
			obj:     newTrainJob(ns, "job.v1"),
			wantErr: "RFC 1035",
		},
		{
			name:    "activeDeadlineSeconds of 0",
			obj:     newTrainJob(ns, "deadline-zero", withDeadline(0)),
			wantErr: "spec.activeDeadlineSeconds",
		},
		// Gantry's run policy (KEP-2899): a TTL of zero is a value, as on a Job.
		{
			name:    "ttlSecondsAfterFinished below 0",
			obj:     newTrainJob(ns, "ttl-negative", withTTL(-1)),
			wantErr: "spec.ttlSecondsAfterFinished",
		},
		{
			name: "ttlSecondsAfterFinished of 0",
			obj:  newTrainJob(ns, "ttl-zero", withTTL(0)),
		},
		{
			name: "runtime runPolicy",
			obj: withRunPolicy(newTrainingRuntime(ns, "run-policy", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{}}),
				&trainer.RunPolicy{ActiveDeadlineSeconds: ptr.To[int64](3600), TTLSecondsAfterFinished: ptr.To[int32](0)}),
		},
		{
			name: "runtime runPolicy activeDeadlineSeconds of 0",
			obj: withRunPolicy(newTrainingRuntime(ns, "run-policy-deadline-zero", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{}}),
				&trainer.RunPolicy{ActiveDeadlineSeconds: ptr.To[int64](0)}),
			wantErr: "spec.runPolicy.activeDeadlineSeconds",
		},
		{
			name: "runtime runPolicy ttlSecondsAfterFinished below 0",
			obj: withRunPolicy(newTrainingRuntime(ns, "run-policy-ttl-negative", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{}}),
				&trainer.RunPolicy{TTLSecondsAfterFinished: ptr.To[int32](-1)}),
			wantErr: "spec.runPolicy.ttlSecondsAfterFinished",
		},
		{
			name:    "managedBy naming an unknown controller",
			obj:     newTrainJob(ns, "managed-elsewhere", withManagedBy("example.com/other")),
			wantErr: "ManagedBy must be",
		},
		{
			name: "managedBy MultiKueue",
			obj:  newTrainJob(ns, "managed-by-multikueue", withManagedBy(trainer.MultiKueueManagedBy)),
		},
		// Trainer v2.3 (kubeflow/trainer#3689) allows command and args
		// items of up to 1 MiB: the Kubeflow SDK sends a whole training
		// function as one item.
		{
			name: "command item of 1 MiB",
			obj:  newTrainJob(ns, "command-1mib", withCommand(strings.Repeat("c", 1<<20))),
		},
		{
			name:    "command item of 1 MiB plus one byte",
			obj:     newTrainJob(ns, "command-too-long", withCommand(strings.Repeat("c", 1<<20+1))),
			wantErr: "spec.trainer.command[0]: Too long",
		},
		{
			name: "args item of 1 MiB",
			obj:  newTrainJob(ns, "args-1mib", withArgs("-c", strings.Repeat("a", 1<<20))),
		},
		{
			name:    "args item of 1 MiB plus one byte",
			obj:     newTrainJob(ns, "args-too-long", withArgs(strings.Repeat("a", 1<<20+1))),
			wantErr: "spec.trainer.args[0]: Too long",
		},
		// Trainer v2.3's storageUri rule: empty, or scheme://something.
		{
			name: "storageUris with a scheme",
			obj:  newTrainJob(ns, "storage-uris", withStorageURIs("s3://bucket/data", "hf://org/model")),
		},
		{
			name: "empty storageUris",
			obj:  newTrainJob(ns, "storage-uris-empty", withStorageURIs("", "")),
		},
		{
			name:    "dataset storageUri without a scheme",
			obj:     newTrainJob(ns, "dataset-no-scheme", withStorageURIs("bucket/data", "hf://org/model")),
			wantErr: "spec.initializer.dataset.storageUri: Invalid value: \"bucket/data\": storageUri may be empty, or it must be a valid URI (scheme://...)",
		},
		{
			name:    "model storageUri with nothing after the scheme",
			obj:     newTrainJob(ns, "model-empty-path", withStorageURIs("s3://bucket/data", "hf://")),
			wantErr: "spec.initializer.model.storageUri: Invalid value: \"hf://\": storageUri may be empty",
		},
		{
			name:    "storageUri scheme starting with a digit",
			obj:     newTrainJob(ns, "scheme-digit", withStorageURIs("3s://bucket/data", "")),
			wantErr: "storageUri may be empty, or it must be a valid URI",
		},
		// Trainer v2.3's envInjection target rules.
		{
			name: "torch envInjection of a sidecar",
			obj: newTrainingRuntime(ns, "inject-sidecar", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{
				EnvInjection: &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{{JobName: "node", ContainerNames: []string{"preflight"}}}},
			}}),
		},
		{
			name: "torch envInjection naming the node container",
			obj: newTrainingRuntime(ns, "inject-node", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{
				EnvInjection: &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{{JobName: "node", ContainerNames: []string{"preflight", "node"}}}},
			}}),
			wantErr: "containerNames must not include the main node container",
		},
		{
			name: "torch envInjection target without containerNames",
			obj: newTrainingRuntime(ns, "inject-nothing", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{
				EnvInjection: &trainer.TorchEnvInjection{Targets: []trainer.TorchEnvInjectionTarget{{JobName: "node"}}},
			}}),
			wantErr: "spec.mlPolicy.torch.envInjection.targets[0].containerNames: Required value",
		},
		{
			name: "torch elasticPolicy",
			obj: newTrainingRuntime(ns, "elastic", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{
				ElasticPolicy: &trainer.TorchElasticPolicy{MinNodes: 1, MaxNodes: 4, MaxRestarts: ptr.To[int32](3)},
			}}),
		},
		{
			name: "torch elasticPolicy with minNodes above maxNodes",
			obj: newTrainingRuntime(ns, "elastic-inverted", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{
				ElasticPolicy: &trainer.TorchElasticPolicy{MinNodes: 3, MaxNodes: 2},
			}}),
			wantErr: "minNodes must not be greater than maxNodes",
		},
		{
			name: "torch elasticPolicy with minNodes 0",
			obj: newTrainingRuntime(ns, "elastic-zero", trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{
				ElasticPolicy: &trainer.TorchElasticPolicy{MinNodes: 0, MaxNodes: 2},
			}}),
			wantErr: "should be greater than or equal to 1",
		},
		{
			name: "torch and mpi policies together",
			obj: newTrainingRuntime(ns, "torch-and-mpi", trainer.MLPolicySource{
				Torch: &trainer.TorchMLPolicySource{},
				MPI:   &trainer.MPIMLPolicySource{},
			}),
			wantErr: "Only one of the policy can be configured",
		},
		{
			name: "jax and xgboost policies together",
			obj: newTrainingRuntime(ns, "jax-and-xgboost", trainer.MLPolicySource{
				JAX:     &trainer.JAXMLPolicySource{},
				XGBoost: &trainer.XGBoostMLPolicySource{},
			}),
			wantErr: "Only one of the policy can be configured",
		},
		{
			name: "Trainer v2.1 torch numProcPerNode keyword",
			obj: newTrainingRuntime(ns, "legacy-torch-auto", trainer.MLPolicySource{
				Torch: &trainer.TorchMLPolicySource{NumProcPerNode: ptr.To(intstr.FromString("auto"))},
			}),
		},
		{
			name: "torch numProcPerNode that is neither a count nor a keyword",
			obj: newTrainingRuntime(ns, "legacy-torch-bad", trainer.MLPolicySource{
				Torch: &trainer.TorchMLPolicySource{NumProcPerNode: ptr.To(intstr.FromString("many"))},
			}),
			wantErr: "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
		},
		{
			name: "flux numProcPerNode of 0",
			obj: newTrainingRuntime(ns, "flux-zero", trainer.MLPolicySource{
				Flux: &trainer.FluxMLPolicySource{NumProcPerNode: ptr.To[int32](0)},
			}),
			wantErr: "NumProcPerNode in fluxPolicy must be >= 1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(ctx, tc.obj)
			expectAdmission(t, err, tc.wantErr)
		})
	}
}

func testImmutableFields(ctx context.Context, t *testing.T, c client.Client, ns string) {
	cases := []struct {
		name    string
		mutate  func(*trainer.TrainJob)
		wantErr string // empty: the update must be accepted
	}{
		{
			name:    "runtimeRef.name",
			mutate:  func(j *trainer.TrainJob) { j.Spec.RuntimeRef.Name = "other-runtime" },
			wantErr: "field is immutable",
		},
		{
			name:    "runtimeRef.kind",
			mutate:  func(j *trainer.TrainJob) { j.Spec.RuntimeRef.Kind = ptr.To(trainer.TrainingRuntimeKind) },
			wantErr: "field is immutable",
		},
		{
			name:    "managedBy",
			mutate:  func(j *trainer.TrainJob) { j.Spec.ManagedBy = ptr.To(trainer.MultiKueueManagedBy) },
			wantErr: "field is immutable",
		},
		{
			name:    "activeDeadlineSeconds",
			mutate:  func(j *trainer.TrainJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](1200) },
			wantErr: "field is immutable",
		},
		{
			name:    "trainer.image",
			mutate:  func(j *trainer.TrainJob) { j.Spec.Trainer.Image = ptr.To("example.com/other:v2") },
			wantErr: "field is immutable",
		},
		// Only numNodes of spec.trainer may change (for elastic PyTorch; the
		// webhook decides when); every other field of it is named in the
		// CRD's rule.
		{
			name:   "trainer.numNodes",
			mutate: func(j *trainer.TrainJob) { j.Spec.Trainer.NumNodes = ptr.To[int32](3) },
		},
		{
			name:    "trainer.command",
			mutate:  func(j *trainer.TrainJob) { j.Spec.Trainer.Command = []string{"python", "other.py"} },
			wantErr: "field is immutable",
		},
		{
			name:    "trainer.args",
			mutate:  func(j *trainer.TrainJob) { j.Spec.Trainer.Args = []string{"--lr=1"} },
			wantErr: "field is immutable",
		},
		{
			name:    "trainer.env",
			mutate:  func(j *trainer.TrainJob) { j.Spec.Trainer.Env = []corev1.EnvVar{{Name: "A", Value: "1"}} },
			wantErr: "field is immutable",
		},
		{
			name: "trainer.resourcesPerNode",
			mutate: func(j *trainer.TrainJob) {
				j.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
			},
			wantErr: "field is immutable",
		},
		{
			name:    "trainer.numProcPerNode",
			mutate:  func(j *trainer.TrainJob) { j.Spec.Trainer.NumProcPerNode = ptr.To[int32](2) },
			wantErr: "field is immutable",
		},
		{
			name:    "serviceAccountName of a runtime patch",
			mutate:  func(j *trainer.TrainJob) { podSpecPatch(j).ServiceAccountName = ptr.To("other-sa") },
			wantErr: "field is immutable",
		},
		{
			// Kueue rewrites node selectors of suspended jobs on admission.
			name:   "nodeSelector of a runtime patch",
			mutate: func(j *trainer.TrainJob) { podSpecPatch(j).NodeSelector = map[string]string{"pool": "b"} },
		},
		{
			name:   "suspend",
			mutate: func(j *trainer.TrainJob) { j.Spec.Suspend = ptr.To(true) },
		},
		{
			// Mutable, as on a Job: a finished job can be kept longer or let go.
			name:   "ttlSecondsAfterFinished",
			mutate: func(j *trainer.TrainJob) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](60) },
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newTrainJob(ns, fmt.Sprintf("immutable-%d", i), withDeadline(600), withKueuePatch())
			if err := c.Create(ctx, job); err != nil {
				t.Fatalf("creating TrainJob: %v", err)
			}
			tc.mutate(job)
			expectAdmission(t, c.Update(ctx, job), tc.wantErr)
		})
	}
}

func testStatusSubresource(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := newTrainJob(ns, "status-job")
	if err := c.Create(ctx, job); err != nil {
		t.Fatalf("creating TrainJob: %v", err)
	}

	job.Status.Conditions = []metav1.Condition{{
		Type:               trainer.TrainJobCreated,
		Status:             metav1.ConditionTrue,
		Reason:             trainer.TrainJobJobsCreationSucceededReason,
		Message:            trainer.TrainJobJobsCreationSucceededMessage,
		LastTransitionTime: metav1.Now(),
	}}
	job.Status.JobsStatus = []trainer.JobStatus{{
		Name: trainer.TrainerNodeName, Ready: ptr.To[int32](1), Succeeded: ptr.To[int32](0),
		Failed: ptr.To[int32](0), Active: ptr.To[int32](1), Suspended: ptr.To[int32](0),
	}}
	job.Spec.Suspend = ptr.To(true) // must be ignored by the status endpoint
	if err := c.Status().Update(ctx, job); err != nil {
		t.Fatalf("status update: %v", err)
	}

	var got trainer.TrainJob
	mustGet(ctx, t, c, client.ObjectKeyFromObject(job), &got)
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != trainer.TrainJobCreated {
		t.Errorf("conditions after status update = %+v", got.Status.Conditions)
	}
	if len(got.Status.JobsStatus) != 1 || ptr.Deref(got.Status.JobsStatus[0].Active, 0) != 1 {
		t.Errorf("jobsStatus after status update = %+v", got.Status.JobsStatus)
	}
	checkEqual(t, "spec.suspend after a status update", ptr.Deref(got.Spec.Suspend, true), false)

	got.Status.Conditions = nil
	got.Spec.Suspend = ptr.To(true)
	if err := c.Update(ctx, &got); err != nil {
		t.Fatalf("spec update: %v", err)
	}
	var afterSpecUpdate trainer.TrainJob
	mustGet(ctx, t, c, client.ObjectKeyFromObject(job), &afterSpecUpdate)
	checkEqual(t, "spec.suspend after a spec update", ptr.Deref(afterSpecUpdate.Spec.Suspend, false), true)
	checkEqual(t, "conditions after a spec update", len(afterSpecUpdate.Status.Conditions), 1)

	afterSpecUpdate.Status.JobsStatus[0].Active = nil
	err := c.Status().Update(ctx, &afterSpecUpdate)
	expectAdmission(t, err, "status.jobsStatus[0].active")
}

func testPrintColumns(ctx context.Context, t *testing.T, cfg *rest.Config, c client.Client, ns string) {
	job := newTrainJob(ns, "columns-job")
	if err := c.Create(ctx, job); err != nil {
		t.Fatalf("creating TrainJob: %v", err)
	}
	job.Status.Conditions = []metav1.Condition{
		{Type: trainer.TrainJobCreated, Status: metav1.ConditionTrue, Reason: trainer.TrainJobJobsCreationSucceededReason, LastTransitionTime: metav1.Now()},
		{Type: trainer.TrainJobRunning, Status: metav1.ConditionTrue, Reason: trainer.TrainJobJobsRunningReason, LastTransitionTime: metav1.Now()},
	}
	if err := c.Status().Update(ctx, job); err != nil {
		t.Fatalf("status update: %v", err)
	}

	table := getTable(ctx, t, cfg, fmt.Sprintf("/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s", ns, job.Name))
	if len(table.Rows) != 1 {
		t.Fatalf("table has %d rows, want 1", len(table.Rows))
	}
	cells := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		cells[col.Name] = table.Rows[0].Cells[i]
	}
	checkEqual(t, "State column", cells["State"], any(trainer.TrainJobRunning))
	checkEqual(t, "Runtime column", cells["Runtime"], any("torch-distributed"))
	if _, ok := cells["Age"]; !ok {
		t.Errorf("no Age column in %v", table.ColumnDefinitions)
	}
}

// --- helpers ---

type trainJobOption func(*trainer.TrainJob)

func newTrainJob(ns, name string, opts ...trainJobOption) *trainer.TrainJob {
	job := &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "torch-distributed"},
			Trainer:    &trainer.Trainer{Image: ptr.To("example.com/train:v1"), NumNodes: ptr.To[int32](2)},
		},
	}
	for _, o := range opts {
		o(job)
	}
	return job
}

func withDeadline(seconds int64) trainJobOption {
	return func(j *trainer.TrainJob) { j.Spec.ActiveDeadlineSeconds = ptr.To(seconds) }
}

func withCommand(cmd ...string) trainJobOption {
	return func(j *trainer.TrainJob) { j.Spec.Trainer.Command = cmd }
}

func withArgs(args ...string) trainJobOption {
	return func(j *trainer.TrainJob) { j.Spec.Trainer.Args = args }
}

func withStorageURIs(dataset, model string) trainJobOption {
	return func(j *trainer.TrainJob) {
		j.Spec.Initializer = &trainer.Initializer{
			Dataset: &trainer.DatasetInitializer{StorageURI: ptr.To(dataset)},
			Model:   &trainer.ModelInitializer{StorageURI: ptr.To(model)},
		}
	}
}

func withTTL(seconds int32) trainJobOption {
	return func(j *trainer.TrainJob) { j.Spec.TTLSecondsAfterFinished = ptr.To(seconds) }
}

func withRunPolicy(rt *trainer.TrainingRuntime, p *trainer.RunPolicy) *trainer.TrainingRuntime {
	rt.Spec.RunPolicy = p
	return rt
}

func withManagedBy(manager string) trainJobOption {
	return func(j *trainer.TrainJob) { j.Spec.ManagedBy = ptr.To(manager) }
}

// withKueuePatch adds the kind of runtime patch Kueue writes on admission.
func withKueuePatch() trainJobOption {
	return func(j *trainer.TrainJob) {
		j.Spec.RuntimePatches = []trainer.RuntimePatch{{
			Manager: "kueue.x-k8s.io/manager",
			TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
				Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
					Name: trainer.TrainerNodeName,
					Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
						Metadata: &metav1.ObjectMeta{Labels: map[string]string{"kueue.x-k8s.io/podset": "node"}},
						Spec: &trainer.PodSpecPatch{
							ServiceAccountName: ptr.To("trainer-sa"),
							NodeSelector:       map[string]string{"pool": "a"},
						},
					}}},
				}}},
			}},
		}}
	}
}

func podSpecPatch(j *trainer.TrainJob) *trainer.PodSpecPatch {
	return j.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
}

func newTrainingRuntime(ns, name string, policy trainer.MLPolicySource) *trainer.TrainingRuntime {
	return &trainer.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{NumNodes: ptr.To[int32](1), MLPolicySource: policy},
		},
	}
}

// expectAdmission checks an API call's outcome: success when wantErr is
// empty, otherwise an Invalid error mentioning wantErr.
func expectAdmission(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("want success, got %v", err)
	case wantErr == "":
	case err == nil:
		t.Fatalf("want an error mentioning %q, got success", wantErr)
	case !apierrors.IsInvalid(err):
		t.Fatalf("want an Invalid error mentioning %q, got %v", wantErr, err)
	case !strings.Contains(err.Error(), wantErr):
		t.Fatalf("want an error mentioning %q, got %v", wantErr, err)
	}
}

func applySample(ctx context.Context, t *testing.T, c client.Client, file, ns string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if ns != "" {
		u.SetNamespace(ns)
	}
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("creating sample %s: %v", file, err)
	}
}

func mustGet(ctx context.Context, t *testing.T, c client.Client, key client.ObjectKey, obj client.Object) {
	t.Helper()
	if err := c.Get(ctx, key, obj); err != nil {
		t.Fatalf("getting %s: %v", key, err)
	}
}

func checkEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// getTable fetches an object the way kubectl get does, as a server-side table.
func getTable(ctx context.Context, t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	return table
}
