package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The patch types below mirror the runtime's shape (TrainingRuntimeSpec →
// JobSet template → replicated job → Job template → pod template) but expose
// only the fields a manager may change. Keeping the same nesting lets a patch
// be merged onto the runtime template path by path, and keeping the set of
// fields small keeps managers away from what the ML plugins own (image,
// command, resources of the trainer).

// RuntimePatch is the set of patches owned by one manager.
type RuntimePatch struct {
	// manager identifies the owner of this entry, e.g. kueue.x-k8s.io/manager.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +required
	Manager string `json:"manager"`

	// time records when the entry last changed; informational only.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`

	// trainingRuntimeSpec patches a TrainingRuntime or ClusterTrainingRuntime.
	// +optional
	TrainingRuntimeSpec *TrainingRuntimeSpecPatch `json:"trainingRuntimeSpec,omitempty"`
}

// TrainingRuntimeSpecPatch is the patchable part of TrainingRuntimeSpec.
type TrainingRuntimeSpecPatch struct {
	// +optional
	Template *JobSetTemplatePatch `json:"template,omitempty"`
}

// JobSetTemplatePatch patches the runtime's JobSet template.
type JobSetTemplatePatch struct {
	// metadata adds labels and annotations to the JobSet.
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec *JobSetSpecPatch `json:"spec,omitempty"`
}

// JobSetSpecPatch patches the JobSet spec.
type JobSetSpecPatch struct {
	// replicatedJobs patches replicated jobs by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	ReplicatedJobs []ReplicatedJobPatch `json:"replicatedJobs,omitempty"`
}

// ReplicatedJobPatch patches one replicated job of the JobSet.
type ReplicatedJobPatch struct {
	// name of the replicated job in the runtime.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// +optional
	Template *JobTemplatePatch `json:"template,omitempty"`
}

// JobTemplatePatch patches the Job template of a replicated job.
type JobTemplatePatch struct {
	// metadata adds labels and annotations to the Jobs.
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec *JobSpecPatch `json:"spec,omitempty"`
}

// JobSpecPatch patches a Job spec.
type JobSpecPatch struct {
	// +optional
	Template *PodTemplatePatch `json:"template,omitempty"`
}

// PodTemplatePatch patches the pod template of a Job.
type PodTemplatePatch struct {
	// metadata adds labels and annotations to the pods.
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec *PodSpecPatch `json:"spec,omitempty"`
}

// PodSpecPatch holds the pod spec fields a manager may patch. Fields that
// shape what runs (service account, volumes, containers, security) are
// immutable once set; scheduling fields stay mutable because Kueue rewrites
// them when it admits or evicts a suspended job.
type PodSpecPatch struct {
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// initContainers patches init containers of the runtime by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	InitContainers []ContainerPatch `json:"initContainers,omitempty"`

	// containers patches containers of the runtime by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	Containers []ContainerPatch `json:"containers,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`

	// terminationGracePeriodSeconds patches the termination grace period of
	// the pods in the target job templates.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ContainerPatch patches one container that the runtime already declares.
type ContainerPatch struct {
	// name of the container in the runtime.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// env is merged over the container's environment. Not allowed for the
	// node, dataset-initializer and model-initializer containers, whose
	// environment comes from the Trainer and Initializer APIs.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}
