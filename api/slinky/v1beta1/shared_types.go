package v1beta1

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ObjectReference points at an object by namespace and name. An empty
// namespace means the namespace of the object holding the reference.
// +structType=atomic
type ObjectReference struct {
	// Namespace of the referent.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the referent.
	// +optional
	Name string `json:"name,omitempty"`
}

// NamespacedName resolves the reference, using defaultNamespace when the
// reference leaves its namespace empty.
func (r ObjectReference) NamespacedName(defaultNamespace string) types.NamespacedName {
	ns := r.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	return types.NamespacedName{Namespace: ns, Name: r.Name}
}

// PodTemplate is the user's part of a pod: extra metadata and a pod spec that
// the operator merges under its own settings.
type PodTemplate struct {
	// Metadata added to the pods.
	// +optional
	Metadata Metadata `json:"metadata,omitzero"`

	// Spec is merged into the pod spec the operator builds.
	// +optional
	Spec PodSpecWrapper `json:"spec,omitzero"`
}

// Metadata is the labels and annotations a user adds to generated objects.
type Metadata struct {
	// +nullable
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// +nullable
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// The wrappers below carry whole core/v1 structs through the CRD as
// schemaless objects: embedding the full PodSpec/Container/ServiceSpec schema
// would make the CRDs huge and tie them to one Kubernetes version, while the
// API server validates the real objects once the operator creates them.
// MarshalJSON uses a value receiver so that the content is not lost when a
// wrapper is marshalled through a non-addressable value.

// PodSpecWrapper holds a corev1.PodSpec, serialised as the bare pod spec.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type PodSpecWrapper struct {
	corev1.PodSpec `json:"-"`
}

// MarshalJSON encodes the wrapped pod spec.
func (w PodSpecWrapper) MarshalJSON() ([]byte, error) { return json.Marshal(w.PodSpec) }

// UnmarshalJSON decodes a pod spec into the wrapper.
func (w *PodSpecWrapper) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, &w.PodSpec) }

// ContainerWrapper holds a corev1.Container, serialised as the bare container.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type ContainerWrapper struct {
	corev1.Container `json:"-"`
}

// MarshalJSON encodes the wrapped container.
func (w ContainerWrapper) MarshalJSON() ([]byte, error) { return json.Marshal(w.Container) }

// UnmarshalJSON decodes a container into the wrapper.
func (w *ContainerWrapper) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &w.Container)
}

// ServiceSpecWrapper holds a corev1.ServiceSpec, serialised as the bare spec.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type ServiceSpecWrapper struct {
	corev1.ServiceSpec `json:"-"`
}

// MarshalJSON encodes the wrapped service spec.
func (w ServiceSpecWrapper) MarshalJSON() ([]byte, error) { return json.Marshal(w.ServiceSpec) }

// UnmarshalJSON decodes a service spec into the wrapper.
func (w *ServiceSpecWrapper) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &w.ServiceSpec)
}

// ServiceSpec customises a Service the operator creates.
type ServiceSpec struct {
	// Metadata added to the Service.
	// +optional
	Metadata Metadata `json:"metadata,omitzero"`

	// Spec is merged into the Service spec the operator builds.
	// +optional
	Spec ServiceSpecWrapper `json:"spec,omitzero"`

	// Port is the external service port number.
	// +optional
	Port int `json:"port,omitempty"`

	// NodePort is the node port used when the Service type is NodePort or
	// LoadBalancer; allocated by Kubernetes when empty.
	// +optional
	NodePort int `json:"nodePort,omitempty"`
}

// ExternalConfig locates a Slurm daemon that runs outside Kubernetes.
type ExternalConfig struct {
	// Host is the hostname or IP address of the daemon.
	// +required
	Host string `json:"host"`

	// Port is the port the daemon listens on.
	// +required
	Port int `json:"port"`
}

// Metrics configures metric collection.
type Metrics struct {
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// +optional
	ServiceMonitor ServiceMonitor `json:"serviceMonitor,omitzero"`
}

// ServiceMonitor describes a Prometheus Operator ServiceMonitor.
type ServiceMonitor struct {
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// Labels and annotations of the ServiceMonitor.
	// +optional
	Metadata `json:",inline"`

	// Interval between scrapes; Prometheus' global interval when empty.
	// +optional
	Interval Duration `json:"interval,omitempty"`

	// ScrapeTimeout of a scrape; Prometheus' global timeout when empty.
	// +optional
	ScrapeTimeout Duration `json:"scrapeTimeout,omitempty"`

	// Endpoints to scrape.
	// +nullable
	// +optional
	Endpoints []MetricEndpoint `json:"endpoints,omitempty"`
}

// MetricEndpoint is one HTTP path to scrape.
type MetricEndpoint struct {
	// +required
	Path string `json:"path"`

	// +optional
	Interval Duration `json:"interval,omitempty"`

	// +optional
	ScrapeTimeout Duration `json:"scrapeTimeout,omitempty"`
}

// Duration is a Prometheus duration such as "30s" or "1m30s".
// +kubebuilder:validation:Pattern:="^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
type Duration string
