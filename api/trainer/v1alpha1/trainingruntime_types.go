package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// ClusterTrainingRuntime is a TrainingRuntime that TrainJobs in any namespace
// may reference; platform teams install the shared blueprints this way.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterTrainingRuntime struct {
	metav1.TypeMeta `json:",inline"`

	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitzero"`
}

// ClusterTrainingRuntimeList is a list of ClusterTrainingRuntimes.
//
// +kubebuilder:object:root=true
type ClusterTrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTrainingRuntime `json:"items"`
}

// TrainingRuntime is a blueprint for TrainJobs in its own namespace: the
// JobSet to create plus the ML and gang-scheduling policies that the
// runtime plugins apply to it.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TrainingRuntime struct {
	metav1.TypeMeta `json:",inline"`

	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitzero"`
}

// TrainingRuntimeList is a list of TrainingRuntimes.
//
// +kubebuilder:object:root=true
type TrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainingRuntime `json:"items"`
}

// TrainingRuntimeSpec is shared by TrainingRuntime and ClusterTrainingRuntime.
//
// +kubebuilder:validation:MinProperties=1
type TrainingRuntimeSpec struct {
	// mlPolicy selects the framework plugin (torch, mpi, ...) and its settings.
	// +optional
	MLPolicy *MLPolicy `json:"mlPolicy,omitempty"`

	// podGroupPolicy turns on gang scheduling for the job's pods.
	// +optional
	PodGroupPolicy *PodGroupPolicy `json:"podGroupPolicy,omitempty"`

	// template is the JobSet every TrainJob of this runtime starts from.
	// +optional
	Template JobSetTemplateSpec `json:"template,omitzero"`

	// runPolicy holds the defaults of the run-time limits of this runtime's
	// TrainJobs; a TrainJob's own value overrides each. Gantry's, beyond
	// Kubeflow Trainer v2.3, following KEP-2899 (kubeflow/trainer#2899):
	// Trainer v2.3 ignores it.
	// +optional
	RunPolicy *RunPolicy `json:"runPolicy,omitempty"`
}

// RunPolicy is a runtime's defaults for how long its TrainJobs may run and
// how long they are kept once finished. A TrainJob uses its own
// activeDeadlineSeconds or ttlSecondsAfterFinished where it sets them, and
// these where it does not; a job takes them from the runtime it was created
// with (the snapshot Gantry keeps on its JobSet).
type RunPolicy struct {
	// activeDeadlineSeconds is the default of a TrainJob's
	// activeDeadlineSeconds: how long it may run, counted from its start or
	// last resume, before it fails with reason DeadlineExceeded.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished is the default of a TrainJob's
	// ttlSecondsAfterFinished: how long a finished TrainJob is kept before
	// it is deleted. Zero deletes it as soon as it finishes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// JobSetTemplateSpec is the JobSet a runtime renders. Its name and namespace
// are always the TrainJob's; only labels and annotations of the metadata
// carry over.
//
// +kubebuilder:validation:MinProperties=1
type JobSetTemplateSpec struct {
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec jobsetv1alpha2.JobSetSpec `json:"spec,omitempty"`
}

// PodGroupPolicy configures gang scheduling. At most one plugin is expected;
// the API does not enforce it, as upstream does not.
type PodGroupPolicy struct {
	PodGroupPolicySource `json:",inline"`
}

// PodGroupPolicySource lists the supported gang-scheduling plugins.
type PodGroupPolicySource struct {
	// coscheduling uses the scheduler-plugins coscheduling PodGroup.
	// +optional
	Coscheduling *CoschedulingPodGroupPolicySource `json:"coscheduling,omitempty"`

	// volcano uses Volcano's PodGroup.
	// +optional
	Volcano *VolcanoPodGroupPolicySource `json:"volcano,omitempty"`
}

// CoschedulingPodGroupPolicySource configures the coscheduling plugin. The
// PodGroup's minMember is always the job's pod count.
type CoschedulingPodGroupPolicySource struct {
	// scheduleTimeoutSeconds is how long the scheduler waits for the whole
	// group to fit before giving up on it.
	// +kubebuilder:default=60
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// VolcanoPodGroupPolicySource configures Volcano gang scheduling.
type VolcanoPodGroupPolicySource struct {
	// networkTopology constrains placement to Volcano HyperNode tiers.
	// +optional
	NetworkTopology *VolcanoNetworkTopologySpec `json:"networkTopology,omitempty"`
}

// VolcanoNetworkTopologyMode says whether a topology constraint must hold.
//
// +kubebuilder:validation:Enum=hard;soft
type VolcanoNetworkTopologyMode string

const (
	// VolcanoNetworkTopologyHard fails scheduling rather than cross tiers.
	VolcanoNetworkTopologyHard VolcanoNetworkTopologyMode = "hard"
	// VolcanoNetworkTopologySoft prefers, but does not require, the tier.
	VolcanoNetworkTopologySoft VolcanoNetworkTopologyMode = "soft"
)

// VolcanoNetworkTopologySpec carries the fields of Volcano's
// scheduling.volcano.sh/v1beta1 NetworkTopologySpec with the same JSON names,
// so Gantry can pass it through without importing Volcano's module.
type VolcanoNetworkTopologySpec struct {
	// +kubebuilder:default=hard
	// +optional
	Mode *VolcanoNetworkTopologyMode `json:"mode,omitempty"`

	// highestTierAllowed is the highest HyperNode tier a job may span.
	// +kubebuilder:default=1
	// +optional
	HighestTierAllowed *int `json:"highestTierAllowed,omitempty"`
}

func init() {
	SchemeBuilder.Register(&ClusterTrainingRuntime{}, &ClusterTrainingRuntimeList{}, &TrainingRuntime{}, &TrainingRuntimeList{})
}
