package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerKind is the kind of the slurmctld resource.
const ControllerKind = "Controller"

// ControllerGVK is the group/version/kind of Controller.
var ControllerGVK = GroupVersion.WithKind(ControllerKind)

// ControllerSpec is the desired state of a Slurm controller (slurmctld).
//
// The key references are needed only when slurmctld runs in Kubernetes: an
// external slurmctld brings its own keys.
// +kubebuilder:validation:XValidation:rule="(has(self.external) && self.external) || has(self.slurmKeyRef)",message="slurmKeyRef must be set when external is false"
// +kubebuilder:validation:XValidation:rule="(has(self.external) && self.external) || has(self.jwtKeyRef) || has(self.jwtHs256KeyRef)",message="jwtKeyRef or jwtHs256KeyRef must be set when external is false"
// +kubebuilder:validation:XValidation:rule="!(has(self.external) && self.external) || has(self.externalConfig)",message="externalConfig must be set when external is true"
// +kubebuilder:validation:XValidation:rule="!(has(self.ha) && self.ha.enabled) || (has(self.persistence) && (!has(self.persistence.enabled) || self.persistence.enabled) && has(self.persistence.existingClaim) && self.persistence.existingClaim.size() > 0)",message="slurm high availability (HA) mode requires existing PVC with an access mode of ReadWriteMany"
type ControllerSpec struct {
	// ClusterName is Slurm's ClusterName. When empty the operator uses
	// "<namespace>_<name>" (see Controller.ClusterName).
	// +optional
	ClusterName string `json:"clusterName,omitempty"`

	// SlurmKeyRef selects the auth/slurm key.
	// +optional
	SlurmKeyRef *corev1.SecretKeySelector `json:"slurmKeyRef,omitempty"`

	// JwtHs256KeyRef selects the auth/jwt HS256 key.
	//
	// Deprecated: use JwtKeyRef; it wins when both are set.
	// +optional
	JwtHs256KeyRef *corev1.SecretKeySelector `json:"jwtHs256KeyRef,omitempty"`

	// JwtKeyRef selects the auth/jwt key.
	// +optional
	JwtKeyRef *corev1.SecretKeySelector `json:"jwtKeyRef,omitempty"`

	// JwksKeyRef selects a JWKS document for auth/jwt.
	// +optional
	JwksKeyRef *corev1.ConfigMapKeySelector `json:"jwksKeyRef,omitempty"`

	// AccountingRef names the Accounting (slurmdbd) this cluster reports to.
	// +optional
	AccountingRef *corev1.LocalObjectReference `json:"accountingRef,omitempty"`

	// External marks a slurmctld that runs outside Kubernetes; only
	// ExternalConfig is used then.
	// +optional
	// +kubebuilder:default=false
	External bool `json:"external,omitempty"`

	// ExternalConfig locates the external slurmctld.
	// +optional
	ExternalConfig *ExternalConfig `json:"externalConfig,omitempty"`

	// HighAvailability runs backup slurmctlds next to the primary (Slurm's
	// SlurmctldHost failover), sharing its state through
	// persistence.existingClaim, which must be ReadWriteMany.
	// Not supported by Gantry yet: admission refuses enabled: true.
	// +optional
	HighAvailability ControllerHighAvailability `json:"ha,omitzero"`

	// Slurmctld overrides the slurmctld container (image, resources, ...).
	// +optional
	Slurmctld ContainerWrapper `json:"slurmctld,omitzero"`

	// InplaceReconfigure applies configuration changes (slurm.conf and the
	// other files Gantry mounts) with `scontrol reconfigure` from a sidecar,
	// keeping the slurmctld pod; when false the pod is replaced on a
	// configuration change and reads the new files at start. A change of a
	// key replaces the pod either way.
	// +optional
	// +kubebuilder:default=false
	InplaceReconfigure bool `json:"inplaceReconfigure,omitempty"`

	// Reconfigure overrides the reconfigure sidecar container (by default
	// the slurmctld image), which runs only with inplaceReconfigure.
	// +optional
	Reconfigure ContainerWrapper `json:"reconfigure,omitzero"`

	// LogFile overrides the log file sidecar container.
	// +optional
	LogFile ContainerWrapper `json:"logfile,omitzero"`

	// Template is merged into the slurmctld pod.
	// +optional
	Template PodTemplate `json:"template,omitzero"`

	// ExtraConf is appended to slurm.conf.
	// +optional
	ExtraConf string `json:"extraConf,omitempty"`

	// ConfigFileRefs name ConfigMaps whose files are mounted into /etc/slurm.
	// +nullable
	// +optional
	ConfigFileRefs []corev1.LocalObjectReference `json:"configFileRefs,omitempty"`

	// PrologScriptRefs name ConfigMaps holding Prolog scripts.
	// +nullable
	// +optional
	PrologScriptRefs []corev1.LocalObjectReference `json:"prologScriptRefs,omitempty"`

	// EpilogScriptRefs name ConfigMaps holding Epilog scripts.
	// +nullable
	// +optional
	EpilogScriptRefs []corev1.LocalObjectReference `json:"epilogScriptRefs,omitempty"`

	// PrologSlurmctldScriptRefs name ConfigMaps holding PrologSlurmctld scripts.
	// +nullable
	// +optional
	PrologSlurmctldScriptRefs []corev1.LocalObjectReference `json:"prologSlurmctldScriptRefs,omitempty"`

	// EpilogSlurmctldScriptRefs name ConfigMaps holding EpilogSlurmctld scripts.
	// +nullable
	// +optional
	EpilogSlurmctldScriptRefs []corev1.LocalObjectReference `json:"epilogSlurmctldScriptRefs,omitempty"`

	// Persistence is the volume holding slurmctld's StateSaveLocation, so that
	// jobs survive a restart or upgrade of the pod.
	// +optional
	// +kubebuilder:default={}
	Persistence ControllerPersistence `json:"persistence,omitzero"`

	// Service customises the slurmctld Service.
	// +optional
	Service ServiceSpec `json:"service,omitzero"`

	// Metrics configures scraping of slurmctld's metrics.
	// +optional
	Metrics Metrics `json:"metrics,omitzero"`
}

// ControllerHighAvailability configures backup slurmctlds.
type ControllerHighAvailability struct {
	// Enabled runs backup slurmctlds that take over when the primary fails.
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// Backups is the number of backup slurmctlds.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	Backups *int32 `json:"backups,omitempty"`
}

// ControllerPersistence describes slurmctld's state volume: either an
// existing claim or the spec of a claim the operator creates.
type ControllerPersistence struct {
	// Enabled keeps slurmctld state on a PersistentVolumeClaim.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// ExistingClaim names a PersistentVolumeClaim to use instead of creating one.
	// +optional
	ExistingClaim string `json:"existingClaim,omitempty"`

	// The claim created when ExistingClaim is empty (storage size in
	// resources.requests.storage, storageClassName, accessModes, ...).
	// +optional
	corev1.PersistentVolumeClaimSpec `json:",inline"`
}

// ControllerStatus is the observed state of a Controller.
type ControllerStatus struct {
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// Controller runs a Slurm controller (slurmctld), or describes an external one.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=slurmctld
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type Controller struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ControllerSpec   `json:"spec,omitempty"`
	Status ControllerStatus `json:"status,omitempty"`
}

// ControllerList is a list of Controllers.
// +kubebuilder:object:root=true
type ControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Controller `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Controller{}, &ControllerList{})
}
