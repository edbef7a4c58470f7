package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RestApiKind is the kind of the slurmrestd resource.
const RestApiKind = "RestApi"

// RestApiGVK is the group/version/kind of RestApi.
var RestApiGVK = GroupVersion.WithKind(RestApiKind)

// RestApiSpec is the desired state of a Slurm REST API (slurmrestd).
type RestApiSpec struct {
	// ControllerRef names the Controller, in the same namespace, this
	// slurmrestd serves.
	// +required
	ControllerRef corev1.LocalObjectReference `json:"controllerRef"`

	// Replicas is the number of slurmrestd pods.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Slurmrestd overrides the slurmrestd container (image, resources, ...).
	// +optional
	Slurmrestd ContainerWrapper `json:"slurmrestd,omitzero"`

	// Template is merged into the slurmrestd pods.
	// +optional
	Template PodTemplate `json:"template,omitzero"`

	// Service customises the slurmrestd Service.
	// +optional
	Service ServiceSpec `json:"service,omitzero"`
}

// RestApiStatus is the observed state of a RestApi.
type RestApiStatus struct {
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// RestApi runs the Slurm REST API daemon (slurmrestd) of a Controller.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=slurmrestd
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type RestApi struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RestApiSpec   `json:"spec,omitempty"`
	Status RestApiStatus `json:"status,omitempty"`
}

// RestApiList is a list of RestApis.
// +kubebuilder:object:root=true
type RestApiList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RestApi `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RestApi{}, &RestApiList{})
}
