package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobStatus is a Ray job's state as Ray's dashboard reports it.
type JobStatus string

// The Ray job states (Ray's JobStatus enum); JobStatusNew is a job not yet
// submitted.
const (
	JobStatusNew       JobStatus = ""
	JobStatusPending   JobStatus = "PENDING"
	JobStatusRunning   JobStatus = "RUNNING"
	JobStatusStopped   JobStatus = "STOPPED"
	JobStatusSucceeded JobStatus = "SUCCEEDED"
	JobStatusFailed    JobStatus = "FAILED"
)

// IsJobTerminal reports whether a Ray job in status can change no more.
func IsJobTerminal(status JobStatus) bool {
	return status == JobStatusStopped || status == JobStatusSucceeded || status == JobStatusFailed
}

// JobDeploymentStatus is where the operator is in running a RayJob: its
// cluster, its submission and its end.
type JobDeploymentStatus string

// The RayJob deployment states, as KubeRay names them.
const (
	JobDeploymentStatusNew              JobDeploymentStatus = ""
	JobDeploymentStatusInitializing     JobDeploymentStatus = "Initializing"
	JobDeploymentStatusRunning          JobDeploymentStatus = "Running"
	JobDeploymentStatusComplete         JobDeploymentStatus = "Complete"
	JobDeploymentStatusFailed           JobDeploymentStatus = "Failed"
	JobDeploymentStatusValidationFailed JobDeploymentStatus = "ValidationFailed"
	JobDeploymentStatusSuspending       JobDeploymentStatus = "Suspending"
	JobDeploymentStatusSuspended        JobDeploymentStatus = "Suspended"
	JobDeploymentStatusRetrying         JobDeploymentStatus = "Retrying"
	JobDeploymentStatusWaiting          JobDeploymentStatus = "Waiting"
)

// IsJobDeploymentTerminal reports whether a RayJob has ended (Complete or
// Failed); only its deletion policies run after that.
func IsJobDeploymentTerminal(status JobDeploymentStatus) bool {
	return status == JobDeploymentStatusComplete || status == JobDeploymentStatusFailed
}

// JobFailedReason says why a RayJob failed.
type JobFailedReason string

// The reasons in status.reason, as KubeRay writes them.
const (
	SubmissionFailed                                 JobFailedReason = "SubmissionFailed"
	DeadlineExceeded                                 JobFailedReason = "DeadlineExceeded"
	PreRunningDeadlineExceeded                       JobFailedReason = "PreRunningDeadlineExceeded"
	AppFailed                                        JobFailedReason = "AppFailed"
	JobDeploymentStatusTransitionGracePeriodExceeded JobFailedReason = "JobDeploymentStatusTransitionGracePeriodExceeded"
	JobStatusCheckTimeoutExceeded                    JobFailedReason = "JobStatusCheckTimeoutExceeded"
	ValidationFailed                                 JobFailedReason = "ValidationFailed"
)

// JobSubmissionMode is how the Ray job reaches the cluster.
type JobSubmissionMode string

const (
	// K8sJobMode submits through a Kubernetes Job running `ray job submit`.
	K8sJobMode JobSubmissionMode = "K8sJobMode"
	// HTTPMode submits with a request to the dashboard from the operator.
	HTTPMode JobSubmissionMode = "HTTPMode"
	// InteractiveMode submits nothing: it waits for the user to submit and
	// to name the job in spec.jobId.
	InteractiveMode JobSubmissionMode = "InteractiveMode"
	// SidecarMode submits from a container added to the head Pod.
	SidecarMode JobSubmissionMode = "SidecarMode"
)

// DeletionStrategy says what is deleted once the RayJob ends: either the
// legacy pair onSuccess and onFailure, or deletionRules.
// +kubebuilder:validation:XValidation:rule="!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",message="legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same deletionStrategy"
// +kubebuilder:validation:XValidation:rule="((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",message="deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)"
type DeletionStrategy struct {
	// OnSuccess is the legacy policy for a job that succeeded; it waits
	// ttlSecondsAfterFinished. Deprecated: use deletionRules.
	// +optional
	OnSuccess *DeletionPolicy `json:"onSuccess,omitempty"`
	// OnFailure is the legacy policy for a job that failed. Deprecated:
	// use deletionRules.
	// +optional
	OnFailure *DeletionPolicy `json:"onFailure,omitempty"`
	// DeletionRules are actions, each with the status that triggers it and
	// a delay. When several are due at once, the most destructive runs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	DeletionRules []DeletionRule `json:"deletionRules,omitempty"`
}

// DeletionRule is one deletion action and when it runs.
type DeletionRule struct {
	// Policy is what to delete.
	// +kubebuilder:validation:Enum=DeleteCluster;DeleteWorkers;DeleteSelf;DeleteNone
	Policy DeletionPolicyType `json:"policy"`
	// Condition is when.
	Condition DeletionCondition `json:"condition"`
}

// DeletionCondition triggers a rule on exactly one of the Ray job's status
// or the RayJob's deployment status, ttlSeconds after the job ended.
// +kubebuilder:validation:XValidation:rule="!(has(self.jobStatus) && has(self.jobDeploymentStatus))",message="JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition."
// +kubebuilder:validation:XValidation:rule="has(self.jobStatus) || has(self.jobDeploymentStatus)",message="the deletion condition requires either the JobStatus or the JobDeploymentStatus field."
type DeletionCondition struct {
	// JobStatus is the Ray job's terminal status that triggers the rule.
	// +kubebuilder:validation:Enum=SUCCEEDED;FAILED
	// +optional
	JobStatus *JobStatus `json:"jobStatus,omitempty"`
	// JobDeploymentStatus is the RayJob's terminal status that triggers
	// the rule: a job that never ran (its submission failed) has no Ray
	// job status to match.
	// +kubebuilder:validation:Enum=Failed
	// +optional
	JobDeploymentStatus *JobDeploymentStatus `json:"jobDeploymentStatus,omitempty"`
	// TTLSeconds is how long after the end the rule waits.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSeconds int32 `json:"ttlSeconds,omitempty"`
}

// DeletionPolicy is the legacy single policy. Deprecated: use DeletionRule.
type DeletionPolicy struct {
	// Policy is what to delete.
	// +kubebuilder:validation:Enum=DeleteCluster;DeleteWorkers;DeleteSelf;DeleteNone
	// +optional
	Policy *DeletionPolicyType `json:"policy,omitempty"`
}

// DeletionPolicyType names what a deletion policy deletes.
type DeletionPolicyType string

const (
	// DeleteCluster deletes the RayCluster.
	DeleteCluster DeletionPolicyType = "DeleteCluster"
	// DeleteWorkers suspends every worker group, keeping the head.
	DeleteWorkers DeletionPolicyType = "DeleteWorkers"
	// DeleteSelf deletes the RayJob, and with it all it owns.
	DeleteSelf DeletionPolicyType = "DeleteSelf"
	// DeleteNone deletes nothing.
	DeleteNone DeletionPolicyType = "DeleteNone"
)

// SubmitterConfig tunes the submitter.
type SubmitterConfig struct {
	// BackoffLimit is the submitter Job's backoffLimit in K8sJobMode (2 if
	// unset), and the submitter container's restart budget in SidecarMode
	// when it restarts on failure.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// RayJobStatusInfo is what the dashboard reports of the Ray job's times.
type RayJobStatusInfo struct {
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
}

// RayJobSpec is the desired state of a RayJob.
type RayJobSpec struct {
	// ActiveDeadlineSeconds fails the RayJob this long after it started.
	// +optional
	ActiveDeadlineSeconds *int32 `json:"activeDeadlineSeconds,omitempty"`
	// BackoffLimit is how many times a failed RayJob is retried, each time
	// on a new RayCluster.
	// +kubebuilder:default:=0
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// RayClusterSpec is the cluster created for the job, unless
	// clusterSelector names an existing one.
	// +optional
	RayClusterSpec *RayClusterSpec `json:"rayClusterSpec,omitempty"`
	// SubmitterPodTemplate is the Pod that runs `ray job submit` in
	// K8sJobMode; by default the head's image with a small request.
	// +optional
	SubmitterPodTemplate *corev1.PodTemplateSpec `json:"submitterPodTemplate,omitempty"`
	// Metadata is stored with the Ray job (`--metadata-json`).
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// ClusterSelector runs the job on the existing RayCluster it names with
	// the ray.io/cluster key; that cluster is never deleted by the RayJob.
	// +optional
	ClusterSelector map[string]string `json:"clusterSelector,omitempty"`
	// SubmitterConfig tunes the submitter.
	// +optional
	SubmitterConfig *SubmitterConfig `json:"submitterConfig,omitempty"`
	// ManagedBy names the controller that reconciles this RayJob: unset or
	// ray.io/kuberay-operator is Gantry, kueue.x-k8s.io/multikueue leaves
	// it to MultiKueue. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the managedBy field is immutable"
	// +kubebuilder:validation:XValidation:rule="self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",message="the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
	// DeletionStrategy says what is deleted after the job ends (feature
	// gate RayJobDeletionPolicy).
	// +optional
	DeletionStrategy *DeletionStrategy `json:"deletionStrategy,omitempty"`
	// Entrypoint is the command the Ray job runs.
	// +optional
	Entrypoint string `json:"entrypoint,omitempty"`
	// RuntimeEnvYAML is the job's runtime environment, as YAML.
	// +optional
	RuntimeEnvYAML string `json:"runtimeEnvYAML,omitempty"`
	// JobId is the Ray job's submission ID; generated when unset. In
	// InteractiveMode the user sets it once they have submitted the job.
	// +optional
	JobId string `json:"jobId,omitempty"`
	// SubmissionMode is how the job is submitted.
	// +kubebuilder:default:=K8sJobMode
	// +optional
	SubmissionMode JobSubmissionMode `json:"submissionMode,omitempty"`
	// EntrypointResources are custom Ray resources reserved for the
	// entrypoint, as a JSON object.
	// +optional
	EntrypointResources string `json:"entrypointResources,omitempty"`
	// EntrypointNumCpus are CPUs reserved for the entrypoint.
	// +optional
	EntrypointNumCpus float32 `json:"entrypointNumCpus,omitempty"`
	// EntrypointNumGpus are GPUs reserved for the entrypoint.
	// +optional
	EntrypointNumGpus float32 `json:"entrypointNumGpus,omitempty"`
	// TTLSecondsAfterFinished delays shutdownAfterJobFinishes and the
	// legacy deletion policies.
	// +kubebuilder:default:=0
	// +optional
	TTLSecondsAfterFinished int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// PreRunningDeadlineSeconds fails a RayJob that is not Running this
	// long after it started.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PreRunningDeadlineSeconds *int32 `json:"preRunningDeadlineSeconds,omitempty"`
	// ShutdownAfterJobFinishes deletes the cluster once the job ended.
	// +optional
	ShutdownAfterJobFinishes bool `json:"shutdownAfterJobFinishes,omitempty"`
	// Suspend holds the RayJob without a cluster (Kueue sets it); set on a
	// running job, it deletes the cluster and the submitter.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RayJobStatus is the observed state of a RayJob.
type RayJobStatus struct {
	// RayJobStatusInfo holds the Ray job's own start and end.
	// +optional
	RayJobStatusInfo RayJobStatusInfo `json:"rayJobInfo,omitempty"`
	// +optional
	JobId string `json:"jobId,omitempty"`
	// +optional
	RayClusterName string `json:"rayClusterName,omitempty"`
	// DashboardURL is host:port of the cluster's dashboard.
	// +optional
	DashboardURL string `json:"dashboardURL,omitempty"`
	// +optional
	JobStatus JobStatus `json:"jobStatus,omitempty"`
	// +optional
	JobDeploymentStatus JobDeploymentStatus `json:"jobDeploymentStatus,omitempty"`
	// +optional
	Reason JobFailedReason `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// StartTime is when this attempt started (activeDeadlineSeconds counts
	// from it).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime is when the RayJob ended (the deletion policies count from
	// it).
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Succeeded counts the attempts that succeeded.
	// +kubebuilder:default:=0
	// +optional
	Succeeded *int32 `json:"succeeded,omitempty"`
	// Failed counts the attempts that failed.
	// +kubebuilder:default:=0
	// +optional
	Failed *int32 `json:"failed,omitempty"`
	// RayClusterStatus is the cluster's status when last seen.
	// +optional
	RayClusterStatus RayClusterStatus `json:"rayClusterStatus,omitempty"`
	// JobStatusCheckFailureStartTime is when the dashboard began failing
	// to answer for the job.
	// +optional
	JobStatusCheckFailureStartTime *metav1.Time `json:"jobStatusCheckFailureStartTime,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// RayJob runs one Ray job on a RayCluster it creates (or on an existing
// one), and records its end.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="job status",type=string,JSONPath=".status.jobStatus",priority=0
// +kubebuilder:printcolumn:name="deployment status",type=string,JSONPath=".status.jobDeploymentStatus",priority=0
// +kubebuilder:printcolumn:name="ray cluster name",type="string",JSONPath=".status.rayClusterName",priority=0
// +kubebuilder:printcolumn:name="start time",type=string,JSONPath=".status.startTime",priority=0
// +kubebuilder:printcolumn:name="end time",type=string,JSONPath=".status.endTime",priority=0
// +kubebuilder:printcolumn:name="age",type="date",JSONPath=".metadata.creationTimestamp",priority=0
type RayJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec RayJobSpec `json:"spec,omitempty"`
	// +optional
	Status RayJobStatus `json:"status,omitempty"`
}

// RayJobList is a list of RayJobs.
// +kubebuilder:object:root=true
type RayJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RayJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RayJob{}, &RayJobList{})
}
