package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrainJob is one training run: a reference to a runtime (the JobSet
// blueprint) plus the job-specific knobs that override it.
//
// The name rules exist because the name becomes the JobSet's name and, through
// it, part of every pod's DNS name; a name the API server would accept for a
// TrainJob but not for a Service or pod hostname would only fail later, inside
// the controller.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.conditions[-1:].type`
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.spec.runtimeRef.name`
// +kubebuilder:printcolumn:name="Runtime Kind",type=string,JSONPath=`.spec.runtimeRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.spec.trainer.numNodes`,priority=1
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must match RFC 1035 DNS label format"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be no more than 63 characters"
type TrainJob struct {
	metav1.TypeMeta `json:",inline"`

	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TrainJobSpec `json:"spec,omitzero"`

	// +optional
	Status TrainJobStatus `json:"status,omitzero"`
}

// TrainJobList is a list of TrainJobs.
//
// +kubebuilder:object:root=true
type TrainJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainJob `json:"items"`
}

// TrainJobSpec is the desired state of a TrainJob.
type TrainJobSpec struct {
	// runtimeRef names the TrainingRuntime or ClusterTrainingRuntime the job
	// is built from. Immutable: switching blueprints under a running job
	// would leave its JobSet describing a different workload.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +required
	RuntimeRef RuntimeRef `json:"runtimeRef"`

	// initializer configures the dataset and model download steps.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	Initializer *Initializer `json:"initializer,omitempty"`

	// trainer overrides the runtime's trainer step (the replicated job
	// labelled trainer.kubeflow.org/trainjob-ancestor-step=trainer).
	// It is immutable as in Trainer v2.3 except numNodes, which the
	// admission webhook lets change only for a job on an elastic runtime
	// (mlPolicy.torch.elasticPolicy). Every other field carries its own
	// self == oldSelf rule, and the rule here keeps each from being added
	// or removed (one rule comparing the fields here would exceed the CEL
	// cost budget); a unit test checks that no field is left out.
	// +kubebuilder:validation:XValidation:rule="has(self.image) == has(oldSelf.image) && has(self.command) == has(oldSelf.command) && has(self.args) == has(oldSelf.args) && has(self.env) == has(oldSelf.env) && has(self.resourcesPerNode) == has(oldSelf.resourcesPerNode) && has(self.numProcPerNode) == has(oldSelf.numProcPerNode)",message="field is immutable"
	// +optional
	Trainer *Trainer `json:"trainer,omitempty"`

	// runtimePatches are patches to the runtime's JobSet template, one entry
	// per manager (a user, Kueue, an admission webhook), so each writer can
	// add and later remove exactly its own changes.
	// +listType=map
	// +listMapKey=manager
	// +kubebuilder:validation:MaxItems=16
	// +optional
	RuntimePatches []RuntimePatch `json:"runtimePatches,omitempty"`

	// suspend stops the job's pods while keeping the TrainJob; resuming
	// restarts the active deadline.
	// +kubebuilder:default=false
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// activeDeadlineSeconds bounds how long the job may run, counted from its
	// start (or last resume). When exceeded the job fails with reason
	// DeadlineExceeded.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished limits how long a finished TrainJob (Complete
	// or Failed) is kept: that many seconds after it finished, the TrainJob
	// is deleted, and with it its JobSet, pods and services. Zero deletes it
	// as soon as it finishes; unset, the runtime's
	// runPolicy.ttlSecondsAfterFinished applies, and without that the job is
	// kept. A suspended job has not finished. Mutable, as on a Job.
	// Gantry's, beyond Kubeflow Trainer v2.3, following KEP-2899
	// (kubeflow/trainer#2899): Trainer v2.3 ignores it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// managedBy names the controller that reconciles this TrainJob. Gantry
	// reconciles only trainer.kubeflow.org/trainjob-controller; jobs handed
	// to MultiKueue are left alone. Immutable so two controllers never fight
	// over one job.
	// +kubebuilder:default="trainer.kubeflow.org/trainjob-controller"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']",message="ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
}

// RuntimeRef points at a TrainingRuntime (same namespace as the TrainJob) or
// a ClusterTrainingRuntime.
type RuntimeRef struct {
	// name of the runtime.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// apiGroup of the runtime.
	// +kubebuilder:default="trainer.kubeflow.org"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`

	// kind of the runtime: ClusterTrainingRuntime or TrainingRuntime.
	// +kubebuilder:default="ClusterTrainingRuntime"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Kind *string `json:"kind,omitempty"`
}

// Initializer configures the steps that fetch data before training.
type Initializer struct {
	// dataset overrides the runtime step labelled
	// trainer.kubeflow.org/trainjob-ancestor-step=dataset-initializer.
	// +optional
	Dataset *DatasetInitializer `json:"dataset,omitempty"`

	// model overrides the runtime step labelled
	// trainer.kubeflow.org/trainjob-ancestor-step=model-initializer.
	// +optional
	Model *ModelInitializer `json:"model,omitempty"`
}

// DatasetInitializer configures the dataset download and pre-processing step.
type DatasetInitializer struct {
	// storageUri is where the dataset comes from, e.g. hf://org/name or
	// s3://bucket/path: empty, or a URI with a scheme (scheme://...).
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",message="storageUri may be empty, or it must be a valid URI (scheme://...)"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	StorageURI *string `json:"storageUri,omitempty"`

	// env is merged over the runtime's dataset-initializer environment.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// secretRef names a Secret in the TrainJob's namespace with credentials
	// for the storage provider.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
}

// ModelInitializer configures the pre-trained model download step.
type ModelInitializer struct {
	// storageUri is where the model comes from, e.g. hf://org/name: empty,
	// or a URI with a scheme (scheme://...).
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",message="storageUri may be empty, or it must be a valid URI (scheme://...)"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	StorageURI *string `json:"storageUri,omitempty"`

	// env is merged over the runtime's model-initializer environment.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// secretRef names a Secret in the TrainJob's namespace with credentials
	// for the model provider.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
}

// Trainer holds the per-job overrides of the runtime's trainer step.
type Trainer struct {
	// image replaces the trainer container's image.
	// +kubebuilder:validation:MaxLength=500
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	Image *string `json:"image,omitempty"`

	// command replaces the trainer container's entrypoint. An item may be
	// up to 1 MiB long, as in Trainer v2.3: the Kubeflow SDK sends a whole
	// training function as one item.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1048576
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	Command []string `json:"command,omitempty"`

	// args replaces the trainer container's arguments; items up to 1 MiB.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1048576
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	Args []string `json:"args,omitempty"`

	// env is merged over the runtime's trainer environment.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// numNodes overrides mlPolicy.numNodes of the runtime.
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty"`

	// resourcesPerNode replaces the trainer container's resources on every node.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`

	// numProcPerNode is the processes (MPI slots, torchrun workers) per node.
	// Unset, torch derives it from the node's resources.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`
}

// TrainJobStatus is the observed state of a TrainJob.
type TrainJobStatus struct {
	// conditions: Created, Running, Suspended, Complete, Failed.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// jobsStatus summarises the child Jobs of each replicated job.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	JobsStatus []JobStatus `json:"jobsStatus,omitempty"`

	// trainerStatus is the progress the trainer reports about itself.
	// +optional
	TrainerStatus *TrainerStatus `json:"trainerStatus,omitempty"`

	// startTime is when the job last started running: its creation, or
	// its last resume if it was suspended. Unset while a job created
	// suspended waits; kept while a job that ran is suspended, and reset
	// when it resumes, as on a Job. activeDeadlineSeconds counts from it.
	// Gantry's, beyond Kubeflow Trainer v2.3, following KEP-2899.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job finished: the time its Complete or
	// Failed condition turned true. ttlSecondsAfterFinished counts from it.
	// Gantry's, beyond Kubeflow Trainer v2.3, following KEP-2899.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// JobStatus counts the child Jobs of one replicated job by state.
type JobStatus struct {
	// name of the replicated job.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// ready counts Jobs whose ready plus succeeded pods reach the expected pod count.
	// +kubebuilder:validation:Minimum=0
	// +required
	Ready *int32 `json:"ready,omitempty"`

	// succeeded counts Jobs that completed.
	// +kubebuilder:validation:Minimum=0
	// +required
	Succeeded *int32 `json:"succeeded,omitempty"`

	// failed counts Jobs that failed.
	// +kubebuilder:validation:Minimum=0
	// +required
	Failed *int32 `json:"failed,omitempty"`

	// active counts Jobs with at least one running or pending pod.
	// +kubebuilder:validation:Minimum=0
	// +required
	Active *int32 `json:"active,omitempty"`

	// suspended counts suspended Jobs.
	// +kubebuilder:validation:Minimum=0
	// +required
	Suspended *int32 `json:"suspended,omitempty"`
}

// TrainerStatus is the latest progress report of the trainer step.
//
// +kubebuilder:validation:XValidation:rule="has(self.lastUpdatedTime)",message="lastUpdatedTime is required when trainerStatus is present"
type TrainerStatus struct {
	// progressPercentage estimates how far training is, 0–100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ProgressPercentage *int32 `json:"progressPercentage,omitempty"`

	// estimatedRemainingSeconds estimates the time left.
	// +kubebuilder:validation:Minimum=0
	// +optional
	EstimatedRemainingSeconds *int32 `json:"estimatedRemainingSeconds,omitempty"`

	// metrics are the latest training metrics, e.g. loss.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Metrics []Metric `json:"metrics,omitempty"`

	// lastUpdatedTime is when this report was observed.
	// +optional
	LastUpdatedTime metav1.Time `json:"lastUpdatedTime,omitzero"`
}

// Metric is one named training metric.
type Metric struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Name string `json:"name"`

	// value is kept as a string so any number format survives.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Value string `json:"value"`
}

func init() {
	SchemeBuilder.Register(&TrainJob{}, &TrainJobList{})
}
