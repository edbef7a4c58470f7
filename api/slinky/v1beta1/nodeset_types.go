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

	// Ssh configures SSH access to the worker pods: an sshd in each slurmd
	// pod, with users resolved by sssd. Enabling it, or changing it or the
	// sssd.conf it names while enabled, replaces the pods.
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

	// PinToNode keeps each pod on the Kubernetes node its ordinal first ran
	// on (remembered in status.ordinalToNode), even while that node is
	// unavailable; the pinning is dropped when the node is deleted or no
	// longer matches the pod, and turning the field off forgets every
	// pinning. StatefulSet scaling mode only.
	// Not supported by Gantry yet: admission refuses true in StatefulSet mode
	// (in DaemonSet mode it is ignored, as upstream ignores it).
	// +optional
	// +kubebuilder:default=false
	PinToNode bool `json:"pinToNode,omitempty"`

	// TaintKubeNodes asked slurm-operator v1.0 and v1.1 to put a NoExecute
	// taint on every node running this NodeSet. Slinky v1.2 removed it: any
	// user allowed to create a NodeSet could evict the pods of every node.
	// It stays in the schema so that old manifests are not pruned; admission
	// refuses true.
	//
	// Deprecated: removed in Slinky v1.2; leave it unset or false.
	// +optional
	// +kubebuilder:default=false
	TaintKubeNodes bool `json:"taintKubeNodes,omitempty"`

	// WorkloadDisruptionProtection guards pods running Slurm jobs with a
	// PodDisruptionBudget.
	// +optional
	// +kubebuilder:default=true
	WorkloadDisruptionProtection *bool `json:"workloadDisruptionProtection,omitempty"`

	// PruneSlurmNodeRecords says when the operator deletes the Slurm node
	// records of this NodeSet: Never, or NodeNotFound (DaemonSet scaling
	// mode only: a record that is DOWN and NOT_RESPONDING, runs no job, and
	// whose pod is gone and whose Kubernetes node is gone or no longer maps
	// to that Slurm node name).
	// +optional
	// +kubebuilder:validation:Enum=Never;NodeNotFound
	// +kubebuilder:default=Never
	PruneSlurmNodeRecords NodeSetPruneSlurmNodeRecordType `json:"pruneSlurmNodeRecords,omitempty"`

	// OversubscribeNode lets several pods of this NodeSet run on the same
	// Kubernetes node (no pod anti-affinity between them). Meant for tests
	// and demos, not production.
	// +optional
	// +kubebuilder:default=false
	OversubscribeNode bool `json:"oversubscribeNode,omitempty"`
}

// NodeSetPruneSlurmNodeRecordType says when a NodeSet's Slurm node records
// are deleted.
// +enum
type NodeSetPruneSlurmNodeRecordType string

const (
	// NodeSetPruneNodeRecordTypeNever never deletes Slurm node records (the
	// default).
	NodeSetPruneNodeRecordTypeNever NodeSetPruneSlurmNodeRecordType = "Never"
	// NodeSetPruneNodeRecordTypeNodeNotFound deletes a Slurm node record once
	// its pod is gone and its Kubernetes node is gone or maps to another
	// Slurm node name (DaemonSet scaling mode only).
	NodeSetPruneNodeRecordTypeNodeNotFound NodeSetPruneSlurmNodeRecordType = "NodeNotFound"
)

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
	// Enabled runs sshd in the slurmd pods.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// ExtraSshdConfig is appended to sshd_config (the <nodeset>-ssh-config
	// ConfigMap); a default it sets outside a Match block replaces Gantry's.
	// +optional
	ExtraSshdConfig string `json:"extraSshdConfig,omitempty"`

	// SssdConfRef selects the Secret key holding sssd.conf.
	// +required
	SssdConfRef corev1.SecretKeySelector `json:"sssdConfRef"`
}

// NodeSetUpdateStrategy is how a NodeSet rolls out a new pod template.
//
// The rule is upstream's, guarded with has() like the Controller's rules:
// the API server checks it against the {} default, which has no type.
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'ScheduledUpdate' || (has(self.scheduledUpdate) && has(self.scheduledUpdate.startTime) && has(self.scheduledUpdate.duration))",message="scheduledUpdate.startTime and scheduledUpdate.duration are required when type is ScheduledUpdate"
type NodeSetUpdateStrategy struct {
	// Type is RollingUpdate (replace pods automatically), OnDelete (replace
	// a pod only after someone deletes it) or ScheduledUpdate (replace pods
	// inside a Slurm maintenance reservation, see scheduledUpdate).
	// Gantry does not support ScheduledUpdate yet: admission refuses it.
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete;ScheduledUpdate
	// +kubebuilder:default=RollingUpdate
	Type NodeSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the RollingUpdate strategy.
	// +optional
	// +kubebuilder:default={}
	RollingUpdate RollingUpdateNodeSetStrategy `json:"rollingUpdate,omitzero"`

	// ScheduledUpdate is the time window of the ScheduledUpdate strategy;
	// read only when type is ScheduledUpdate. Not supported by Gantry yet:
	// admission refuses a startTime, flags or a duration other than the
	// default.
	// +optional
	ScheduledUpdate ScheduledUpdateNodeSetStrategy `json:"scheduledUpdate,omitzero"`
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
	// ScheduledUpdateNodeSetStrategyType replaces outdated pods only while
	// their Slurm nodes are in a maintenance (MAINT) reservation that the
	// operator makes from spec.updateStrategy.scheduledUpdate.
	ScheduledUpdateNodeSetStrategyType NodeSetUpdateStrategyType = "ScheduledUpdate"
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

// ScheduledUpdateNodeSetStrategy is the Slurm reservation inside which the
// ScheduledUpdate strategy replaces pods.
type ScheduledUpdateNodeSetStrategy struct {
	// StartTime is when the update window, and so the reservation, begins:
	// an RFC 3339 time such as "2026-05-01T22:00:00Z".
	// +optional
	StartTime metav1.Time `json:"startTime,omitzero"`

	// Duration is how long the update window lasts, as a Go duration such
	// as "30m" or "2h".
	// +optional
	// +kubebuilder:default="30m"
	Duration metav1.Duration `json:"duration,omitzero"`

	// Flags are extra Slurm reservation flags (scontrol's Flags=, e.g.
	// IGNORE_JOBS) added to the reservation.
	// +nullable
	// +optional
	Flags []string `json:"flags,omitempty"`
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

	// OrdinalToNode maps a pod ordinal (as a string) to the Kubernetes node
	// that ordinal is pinned to when spec.pinToNode is on. Gantry does not
	// pin pods yet and does not fill it in.
	// +optional
	// +nullable
	OrdinalToNode map[string]string `json:"ordinalToNode,omitempty"`

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
