package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodeSetKind is the kind of the slurmd worker set resource.
const NodeSetKind = "NodeSet"

// NodeSetGVK is the group/version/kind of NodeSet.
var NodeSetGVK = GroupVersion.WithKind(NodeSetKind)

// NodeSetSpec is the desired state of a set of identical Slurm nodes (slurmd pods).
type NodeSetSpec struct {
	// ControllerRef points at the Controller whose cluster these nodes join.
	// It cannot change: the pods are already registered with that cluster.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="controllerRef is immutable"
	ControllerRef ObjectReference `json:"controllerRef"`

	// Replicas is the desired number of pods; ignored in DaemonSet scaling mode.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// ScalingMode chooses between a fixed number of ordinal pods
	// (StatefulSet) and one pod per matching Kubernetes node (DaemonSet).
	// +optional
	// +kubebuilder:validation:Enum=DaemonSet;StatefulSet
	// +kubebuilder:default=StatefulSet
	ScalingMode ScalingModeType `json:"scalingMode,omitempty"`

	// Slurmd overrides the slurmd container (image, resources, ...).
	// +optional
	Slurmd ContainerWrapper `json:"slurmd,omitzero"`

	// Ssh configures SSH access to the worker pods.
	// +optional
	Ssh NodeSetSsh `json:"ssh,omitzero"`

	// LogFile overrides the log file sidecar container.
	// +optional
	LogFile ContainerWrapper `json:"logfile,omitzero"`

	// Template is merged into the worker pods.
	// +optional
	Template PodTemplate `json:"template,omitzero"`

	// ExtraConf is passed to slurmd as `--conf <extraConf>` (node parameters
	// such as Features or Gres).
	// +optional
	ExtraConf string `json:"extraConf,omitempty"`

	// Partition configures a Slurm partition made of this NodeSet's nodes.
	// +optional
	Partition NodeSetPartition `json:"partition,omitzero"`

	// VolumeClaimTemplates are claims created per pod, named
	// <claim>-<nodeset>-<ordinal>; each needs a matching volumeMount.
	// +nullable
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// UpdateStrategy is how pods are replaced when the template changes.
	// +optional
	// +kubebuilder:default={}
	UpdateStrategy NodeSetUpdateStrategy `json:"updateStrategy,omitzero"`

	// RevisionHistoryLimit is how many old ControllerRevisions are kept.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit int32 `json:"revisionHistoryLimit,omitempty"`

	// PersistentVolumeClaimRetentionPolicy says what happens to claims from
	// VolumeClaimTemplates when the NodeSet is deleted or scaled in.
	// +optional
	// +kubebuilder:default={}
	PersistentVolumeClaimRetentionPolicy NodeSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitzero"`

	// MinReadySeconds is how long a pod must be ready before it counts as
	// available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// OrdinalPadding is the number of digits pod ordinals are zero-padded to
	// (e.g. 3 gives name-000), so Slurm hostlists compress well. StatefulSet
	// scaling mode only.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	OrdinalPadding int32 `json:"ordinalPadding,omitempty"`

	// TaintKubeNodes asked for a NoExecute taint on nodes running this NodeSet.
	//
	// Deprecated: upstream forces it off; accepted and ignored.
	// +optional
	// +kubebuilder:default=false
	TaintKubeNodes bool `json:"taintKubeNodes,omitempty"`

	// WorkloadDisruptionProtection guards pods running Slurm jobs with a
	// PodDisruptionBudget.
	// +optional
	// +kubebuilder:default=true
	WorkloadDisruptionProtection *bool `json:"workloadDisruptionProtection,omitempty"`
}

// ScalingModeType says how a NodeSet decides how many pods to run.
// +enum
type ScalingModeType string

const (
	// ScalingModeStatefulset runs spec.replicas pods with stable ordinals.
	ScalingModeStatefulset ScalingModeType = "StatefulSet"
	// ScalingModeDaemonset runs one pod on every matching Kubernetes node.
	ScalingModeDaemonset ScalingModeType = "DaemonSet"
)

// NodeSetPartition is the Slurm partition of a NodeSet.
type NodeSetPartition struct {
	// Enabled creates a partition named after the NodeSet.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// Config is appended to the partition line in slurm.conf.
	// +optional
	Config string `json:"config,omitempty"`
}

// NodeSetSsh configures SSH access to NodeSet pods.
type NodeSetSsh struct {
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// ExtraSshdConfig is appended to sshd_config.
	// +optional
	ExtraSshdConfig string `json:"extraSshdConfig,omitempty"`

	// SssdConfRef selects the Secret key holding sssd.conf.
	// +required
	SssdConfRef corev1.SecretKeySelector `json:"sssdConfRef"`
}

// NodeSetUpdateStrategy is how a NodeSet rolls out a new pod template.
type NodeSetUpdateStrategy struct {
	// Type is RollingUpdate (replace pods automatically) or OnDelete
	// (replace a pod only after someone deletes it).
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +kubebuilder:default=RollingUpdate
	Type NodeSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the RollingUpdate strategy.
	// +optional
	// +kubebuilder:default={}
	RollingUpdate RollingUpdateNodeSetStrategy `json:"rollingUpdate,omitzero"`
}

// NodeSetUpdateStrategyType names an update strategy.
// +enum
type NodeSetUpdateStrategyType string

const (
	// RollingUpdateNodeSetStrategyType replaces outdated pods automatically,
	// at most MaxUnavailable at a time.
	RollingUpdateNodeSetStrategyType NodeSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteNodeSetStrategyType replaces an outdated pod only once it is deleted.
	OnDeleteNodeSetStrategyType NodeSetUpdateStrategyType = "OnDelete"
)

// RollingUpdateNodeSetStrategy tunes rolling updates.
type RollingUpdateNodeSetStrategy struct {
	// MaxUnavailable is how many pods may be unavailable during the update:
	// a number (5) or a percentage of desired pods rounded up ("10%").
	// +optional
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XIntOrString
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// PersistentVolumeClaimRetentionPolicyType says whether claims are kept or deleted.
// +enum
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the claims.
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the claims.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// NodeSetPersistentVolumeClaimRetentionPolicy is the lifecycle of claims made
// from VolumeClaimTemplates.
type NodeSetPersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted applies when the NodeSet is deleted.
	// +optional
	// +kubebuilder:validation:Enum=Retain;Delete
	// +kubebuilder:default=Retain
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`

	// WhenScaled applies to the pods removed by a scale-in.
	// +optional
	// +kubebuilder:validation:Enum=Retain;Delete
	// +kubebuilder:default=Retain
	WhenScaled PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// NodeSetStatus is the observed state of a NodeSet.
type NodeSetStatus struct {
	// Replicas is the number of non-terminated pods of the NodeSet.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of pods at the current revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is the number of pods with a Ready condition.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of pods ready for at least MinReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// UnavailableReplicas is the number of pods still missing for full
	// availability, created or not.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// Desired is the number of pods that should run: spec.replicas, or the
	// number of matching nodes in DaemonSet scaling mode.
	// +optional
	Desired int32 `json:"desired,omitempty"`

	// SlurmIdle counts pods whose Slurm node is IDLE (no jobs).
	// +optional
	SlurmIdle int32 `json:"slurmIdle,omitempty"`

	// SlurmAllocated counts pods whose Slurm node is ALLOCATED or MIXED.
	// +optional
	SlurmAllocated int32 `json:"slurmAllocated,omitempty"`

	// SlurmDown counts pods whose Slurm node is DOWN.
	// +optional
	SlurmDown int32 `json:"slurmDown,omitempty"`

	// SlurmDrain counts pods whose Slurm node is DRAIN (no new jobs; running
	// jobs finish).
	// +optional
	SlurmDrain int32 `json:"slurmDrain,omitempty"`

	// ObservedGeneration is the generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// NodeSetHash is the revision hash of the current pod template.
	// +optional
	NodeSetHash string `json:"nodeSetHash"`

	// CollisionCount disambiguates ControllerRevision names whose hashes collide.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Selector is the pods' label selector in string form, read by the
	// scale subresource (and so by HorizontalPodAutoscalers).
	// +optional
	Selector string `json:"selector"`
}

// NodeSet runs a set of identical Slurm worker nodes (slurmd pods).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=nodesets;nss;slurmd
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desired",description="The number of pods that should run."
// +kubebuilder:printcolumn:name="REPLICAS",type="integer",JSONPath=".status.replicas",description="The current number of pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods at the current revision."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of ready pods."
// +kubebuilder:printcolumn:name="IDLE",type="integer",JSONPath=".status.slurmIdle",priority=1,description="The number of IDLE Slurm nodes."
// +kubebuilder:printcolumn:name="ALLOCATED",type="integer",JSONPath=".status.slurmAllocated",priority=1,description="The number of ALLOCATED or MIXED Slurm nodes."
// +kubebuilder:printcolumn:name="DOWN",type="integer",JSONPath=".status.slurmDown",priority=1,description="The number of DOWN Slurm nodes."
// +kubebuilder:printcolumn:name="DRAIN",type="integer",JSONPath=".status.slurmDrain",priority=1,description="The number of DRAIN Slurm nodes."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type NodeSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeSetSpec   `json:"spec,omitempty"`
	Status NodeSetStatus `json:"status,omitempty"`
}

// NodeSetList is a list of NodeSets.
// +kubebuilder:object:root=true
type NodeSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodeSet{}, &NodeSetList{})
}
