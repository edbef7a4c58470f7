package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LoginSetKind is the kind of the Slurm login node resource.
const LoginSetKind = "LoginSet"

// LoginSetGVK is the group/version/kind of LoginSet.
var LoginSetGVK = GroupVersion.WithKind(LoginSetKind)

// DefaultLoginSetReplicas is the number of login pods when replicas is unset.
const DefaultLoginSetReplicas int32 = 1

// LoginSetSpec is the desired state of a set of Slurm login pods: sshd for
// users, sssd to resolve them, and sackd so that Slurm's client commands
// (sbatch, srun, squeue, ...) reach the Controller's slurmctld.
type LoginSetSpec struct {
	// ControllerRef names the Controller, in the same namespace, whose
	// cluster the login pods submit to.
	// +required
	ControllerRef corev1.LocalObjectReference `json:"controllerRef"`

	// Replicas is the number of login pods (default 1).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Login overrides the login container (image, env, resources, volume
	// mounts, ...). A container port named "login" changes the port sshd is
	// reached on (for hostNetwork pods).
	// +optional
	Login ContainerWrapper `json:"login,omitempty"`

	// InitConf overrides the initconf init container, which copies the
	// cluster's auth/slurm key into /etc/slurm with the ownership sackd
	// needs (by default an Alpine image).
	// +optional
	InitConf ContainerWrapper `json:"initconf,omitzero"`

	// Template is merged into the login pods.
	// +optional
	Template PodTemplate `json:"template,omitempty"`

	// RootSshAuthorizedKeys is written to /root/.ssh/authorized_keys.
	// +optional
	RootSshAuthorizedKeys string `json:"rootSshAuthorizedKeys,omitzero"`

	// ExtraSshdConfig is appended to the generated sshd_config.
	// Ref: https://man7.org/linux/man-pages/man5/sshd_config.5.html
	// +optional
	ExtraSshdConfig string `json:"extraSshdConfig,omitzero"`

	// SssdConfRef selects the Secret key holding sssd.conf, which tells
	// sssd where the cluster's users and groups come from.
	// +required
	SssdConfRef corev1.SecretKeySelector `json:"sssdConfRef,omitzero"`

	// Strategy is how the login Deployment replaces pods on a change.
	// Ref: https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#strategy
	// +optional
	Strategy appsv1.DeploymentStrategy `json:"strategy,omitzero"`

	// Service customises the Service users ssh to (port 22 unless
	// service.port says otherwise).
	// +optional
	Service ServiceSpec `json:"service,omitzero"`
}

// LoginSetStatus is the observed state of a LoginSet.
type LoginSetStatus struct {
	// Replicas is the number of non-terminated login pods (those matching
	// selector).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of login pods that are Ready (sackd has
	// its socket). A Gantry addition; Slinky reports replicas only.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Conditions are the latest observations of the LoginSet's state.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Selector is the label selector of the login pods, in string form,
	// for the scale subresource (kubectl scale, HorizontalPodAutoscaler).
	Selector string `json:"selector"`
}

// LoginSet runs Slurm login pods (sshd, sssd and sackd) for a Controller's
// cluster, behind one Service.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=loginsets;lss;sackd
// +kubebuilder:subresource:scale:specpath=".spec.replicas",statuspath=".status.replicas",selectorpath=".status.selector"
// +kubebuilder:printcolumn:name="REPLICAS",type="integer",JSONPath=".status.replicas",priority=0,description="The current number of pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type LoginSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LoginSetSpec   `json:"spec,omitempty"`
	Status LoginSetStatus `json:"status,omitempty"`
}

// LoginSetList is a list of LoginSets.
// +kubebuilder:object:root=true
type LoginSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LoginSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LoginSet{}, &LoginSetList{})
}

// ReplicasOrDefault is the number of login pods asked for.
func (l *LoginSet) ReplicasOrDefault() int32 {
	if l.Spec.Replicas == nil {
		return DefaultLoginSetReplicas
	}
	return *l.Spec.Replicas
}
