package v1alpha1

// Well-known names of the Trainer v2 API. They appear on the wire (in
// runtimes users write, in conditions tools watch, on pods other controllers
// select), so every value here is Kubeflow Trainer's; names marked "Gantry"
// are additions that upstream does not define.

// Kinds.
const (
	TrainJobKind               = "TrainJob"
	TrainingRuntimeKind        = "TrainingRuntime"
	ClusterTrainingRuntimeKind = "ClusterTrainingRuntime"
)

// spec.managedBy values.
const (
	// TrainJobControllerManagedBy is the default: Gantry (in Trainer's place)
	// reconciles the job.
	TrainJobControllerManagedBy = "trainer.kubeflow.org/trainjob-controller"
	// MultiKueueManagedBy hands the job to Kueue's MultiKueue, which runs it
	// on a worker cluster; the local controller must leave it alone.
	MultiKueueManagedBy = "kueue.x-k8s.io/multikueue"
)

// TrainJob condition types.
const (
	// TrainJobCreated (Gantry; upstream Trainer v2.0 had it) is True once the
	// JobSet and its companions exist, False with a reason when they could
	// not be built or created — including a missing runtime, so such
	// failures are visible without reading events.
	TrainJobCreated = "Created"
	// TrainJobRunning (Gantry) is True while the JobSet has active jobs and
	// the TrainJob is neither suspended nor finished.
	TrainJobRunning   = "Running"
	TrainJobSuspended = "Suspended"
	TrainJobComplete  = "Complete"
	TrainJobFailed    = "Failed"
)

// TrainJob condition reasons.
const (
	// Suspended condition.
	TrainJobSuspendedReason = "Suspended"
	TrainJobResumedReason   = "Resumed"

	// Failed condition.
	TrainJobRuntimeNotSupportedReason = "TrainingRuntimeNotSupported"
	TrainJobDeadlineExceededReason    = "DeadlineExceeded"
	// TrainJobDeadlineExceededMessage is that condition's message, as
	// Trainer v2.3 writes it.
	TrainJobDeadlineExceededMessage = "TrainJob exceeded its active deadline"

	// Created condition (upstream Trainer v2.0 values).
	TrainJobJobsCreationSucceededReason = "JobsCreationSucceeded"
	TrainJobJobsBuildFailedReason       = "JobsBuildFailed"
	TrainJobJobsCreationFailedReason    = "JobsCreationFailed"
	// TrainJobRuntimeNotFoundReason (Gantry) marks a runtimeRef naming a
	// runtime that does not exist. The Failed condition it sets is
	// terminal: a runtime created later does not revive the job (its spec
	// may have been written for another runtime); submit a new TrainJob.
	TrainJobRuntimeNotFoundReason = "TrainingRuntimeNotFound"

	// Running condition (Gantry).
	TrainJobJobsRunningReason = "JobsRunning"
)

// TrainJob condition messages used by upstream.
const (
	TrainJobSuspendedMessage             = "TrainJob is suspended"
	TrainJobResumedMessage               = "TrainJob is resumed"
	TrainJobJobsCreationSucceededMessage = "Succeeded to create Jobs"
	TrainJobJobsBuildFailedMessage       = "Failed to build Jobs"
	TrainJobJobsCreationFailedMessage    = "Failed to create Jobs"
)

// Labels.
const (
	// LabelTrainJobAncestor marks which replicated job of a runtime a part of
	// the TrainJob overrides: spec.initializer.dataset, spec.initializer.model
	// or spec.trainer.
	LabelTrainJobAncestor = "trainer.kubeflow.org/trainjob-ancestor-step"
	// LabelRuntimeFramework on a runtime tells tools (the Kubeflow SDK) which
	// framework it runs, e.g. torch or deepspeed.
	LabelRuntimeFramework = "trainer.kubeflow.org/framework"
)

// Values of LabelTrainJobAncestor.
const (
	AncestorDatasetInitializer = DatasetInitializerName
	AncestorModelInitializer   = ModelInitializerName
	AncestorTrainer            = "trainer"
)

// Replicated job and container names that runtimes use by convention.
const (
	// DatasetInitializerName names the dataset initializer's job, container and volume.
	DatasetInitializerName = "dataset-initializer"
	// ModelInitializerName names the model initializer's job, container and volume.
	ModelInitializerName = "model-initializer"
	// TrainerNodeName names the trainer's job and container.
	TrainerNodeName = "node"
	// LauncherName names the MPI launcher's job and container; with
	// runLauncherAsNode the launcher's container is called node instead.
	LauncherName = "launcher"
)

// Mount paths the initializers write to and the trainer reads from.
const (
	DatasetMountPath = "/workspace/dataset"
	ModelMountPath   = "/workspace/model"
)

// ContainerTrainerPort is the port trainer nodes rendezvous on (PET_MASTER_PORT).
const ContainerTrainerPort int32 = 29500

// ResourceInUseFinalizer keeps a runtime from being deleted while TrainJobs
// still reference it.
const ResourceInUseFinalizer = "trainer.kubeflow.org/resource-in-use"

// torchrun environment, set on trainer containers by the torch plugin.
const (
	TorchEnvNumNodes       = "PET_NNODES"
	TorchEnvNumProcPerNode = "PET_NPROC_PER_NODE"
	TorchEnvNodeRank       = "PET_NODE_RANK"
	TorchEnvMasterAddr     = "PET_MASTER_ADDR"
	TorchEnvMasterPort     = "PET_MASTER_PORT"

	// Elastic mode (mlPolicy.torch.elasticPolicy, Gantry's addition):
	// torchrun's --rdzv-backend, --rdzv-endpoint, --rdzv-id and
	// --max-restarts, which torchrun reads from PET_<FLAG>.
	TorchEnvRdzvBackend  = "PET_RDZV_BACKEND"
	TorchEnvRdzvEndpoint = "PET_RDZV_ENDPOINT"
	TorchEnvRdzvID       = "PET_RDZV_ID"
	TorchEnvMaxRestarts  = "PET_MAX_RESTARTS"
)

// Names of the objects and volumes the MPI plugin adds; the suffixes follow
// the TrainJob name.
const (
	MPISSHAuthSecretSuffix     = "-mpi-ssh-auth"
	MPISSHAuthVolumeName       = "mpi-ssh-auth"
	MPIHostfileConfigMapSuffix = "-mpi-hostfile"
	MPIHostfileVolumeName      = "mpi-hostfile"
	MPIHostfileDir             = "/etc/mpi"
	MPIHostfileName            = "hostfile"
)
