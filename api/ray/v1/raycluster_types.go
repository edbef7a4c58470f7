package v1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RayClusterSpec is the desired state of a RayCluster.
type RayClusterSpec struct {
	// UpgradeStrategy decides what happens to running Pods when the spec
	// changes. Without it (or with None) Pods are left as they are.
	// +optional
	UpgradeStrategy *RayClusterUpgradeStrategy `json:"upgradeStrategy,omitempty"`

	// AuthOptions turns on Ray's own token authentication (Ray >= 2.52).
	// +optional
	AuthOptions *AuthOptions `json:"authOptions,omitempty"`

	// Suspend deletes every Pod of the cluster while keeping the object, so
	// a queueing system (Kueue) can hold it until it is admitted.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// ManagedBy names the controller that reconciles this cluster. Unset or
	// ray.io/kuberay-operator means Gantry (standing in for KubeRay);
	// kueue.x-k8s.io/multikueue means MultiKueue dispatches it to a worker
	// cluster and Gantry must leave it alone here. Changing it once set is
	// rejected: two controllers fighting over one cluster's Pods is never
	// what a user wants.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the managedBy field is immutable"
	// +kubebuilder:validation:XValidation:rule="self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",message="the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`

	// AutoscalerOptions tunes the Ray autoscaler sidecar that runs in the
	// head Pod when EnableInTreeAutoscaling is true.
	// +optional
	AutoscalerOptions *AutoscalerOptions `json:"autoscalerOptions,omitempty"`

	// HeadServiceAnnotations are copied onto the head Service, e.g. for
	// cloud load-balancer settings.
	// +optional
	HeadServiceAnnotations map[string]string `json:"headServiceAnnotations,omitempty"`

	// EnableInTreeAutoscaling adds the Ray autoscaler sidecar to the head Pod
	// and hands worker-group replica counts to it.
	// +optional
	EnableInTreeAutoscaling *bool `json:"enableInTreeAutoscaling,omitempty"`

	// GcsFaultToleranceOptions stores the GCS state in an external Redis so
	// the cluster survives a head Pod restart.
	// +optional
	GcsFaultToleranceOptions *GcsFaultToleranceOptions `json:"gcsFaultToleranceOptions,omitempty"`

	// HistoryServerOptions adds KubeRay's history-server collector sidecar
	// (KubeRay v1.7, alpha gate RayClusterHistoryServer). Gantry does not
	// run the collector; admission refuses the field with a message.
	// +optional
	HistoryServerOptions *HistoryServerOptions `json:"historyServerOptions,omitempty"`

	// NetworkPolicy asks for NetworkPolicies isolating the cluster's Pods
	// (KubeRay v1.7, alpha gate RayClusterNetworkPolicy). Gantry does not
	// create them yet; admission refuses the field with a message.
	// +optional
	NetworkPolicy *NetworkPolicyConfig `json:"networkPolicy,omitempty"`

	// TLSOptions asks for mutual TLS between Ray nodes with certificates
	// from cert-manager (KubeRay v1.7, alpha gate RayClusterMTLS). Gantry
	// does not provision them yet; admission refuses the field with a
	// message.
	// +optional
	TLSOptions *TLSOptions `json:"tlsOptions,omitempty"`

	// HeadGroupSpec describes the single head Pod.
	HeadGroupSpec HeadGroupSpec `json:"headGroupSpec"`

	// RayVersion is the Ray version the images run; some behaviour (auth,
	// autoscaler v2) depends on it.
	// +optional
	RayVersion string `json:"rayVersion,omitempty"`

	// WorkerGroupSpecs describe the worker groups.
	// +optional
	WorkerGroupSpecs []WorkerGroupSpec `json:"workerGroupSpecs,omitempty"`
}

// RayClusterUpgradeType names an upgrade strategy.
// +kubebuilder:validation:Enum=Recreate;None
type RayClusterUpgradeType string

const (
	// RayClusterRecreate deletes all Pods and creates them afresh when the
	// spec (ignoring replica counts and workersToDelete) changes.
	RayClusterRecreate RayClusterUpgradeType = "Recreate"
	// RayClusterUpgradeNone leaves running Pods untouched on spec changes.
	RayClusterUpgradeNone RayClusterUpgradeType = "None"
)

// RayClusterUpgradeStrategy selects how spec changes reach running Pods.
type RayClusterUpgradeStrategy struct {
	// Type is Recreate or None.
	// +optional
	Type *RayClusterUpgradeType `json:"type,omitempty"`
}

// AuthMode is Ray's authentication mode.
type AuthMode string

const (
	// AuthModeDisabled turns Ray authentication off.
	AuthModeDisabled AuthMode = "disabled"
	// AuthModeToken requires a shared token on every Ray connection.
	AuthModeToken AuthMode = "token"
)

// AuthOptions configures Ray authentication.
type AuthOptions struct {
	// EnableK8sTokenAuth makes Ray check callers' Kubernetes ServiceAccount
	// tokens against the API server instead of a shared secret.
	// +optional
	EnableK8sTokenAuth *bool `json:"enableK8sTokenAuth,omitempty"`

	// SecretName points at an existing Secret whose auth_token key holds the
	// token; when unset the operator generates one Secret per cluster.
	// +optional
	SecretName *string `json:"secretName,omitempty"`

	// Mode is disabled or token. Only token turns authentication on; an
	// empty mode, as in authOptions: {}, leaves it off (KubeRay v1.6).
	// +kubebuilder:validation:Enum=disabled;token
	// +optional
	Mode AuthMode `json:"mode,omitempty"`
}

// GcsFaultToleranceOptions configures GCS fault tolerance backed by Redis.
type GcsFaultToleranceOptions struct {
	// Backend is where the GCS keeps its state: redis (the default, an
	// external Redis) or rocksdb (an embedded store on a volume of the head
	// Pod, KubeRay v1.7's alpha gate GCSFaultToleranceEmbeddedStorage,
	// which Gantry refuses at admission). It cannot change once set.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="gcsFaultToleranceOptions.backend is immutable"
	// +optional
	Backend GcsFaultToleranceBackend `json:"backend,omitempty"`

	// RedisUsername is the Redis ACL user, inline or from a Secret.
	// +optional
	RedisUsername *RedisCredential `json:"redisUsername,omitempty"`

	// RedisPassword is the Redis password, inline or from a Secret.
	// +optional
	RedisPassword *RedisCredential `json:"redisPassword,omitempty"`

	// ExternalStorageNamespace isolates this cluster's keys in Redis; it
	// defaults to the cluster's UID so a re-created cluster starts clean.
	// +optional
	ExternalStorageNamespace string `json:"externalStorageNamespace,omitempty"`

	// RedisAddress is host:port of the Redis server. Optional in the schema
	// since KubeRay v1.7 (the rocksdb backend has none); Gantry's validation
	// requires it for the redis backend.
	// +optional
	RedisAddress string `json:"redisAddress,omitempty"`

	// Storage is the volume of the rocksdb backend; it does not apply to
	// redis.
	// +optional
	Storage *GcsEmbeddedStorage `json:"storage,omitempty"`
}

// GcsFaultToleranceBackend names where the GCS keeps its fault-tolerant
// state.
// +kubebuilder:validation:Enum=redis;rocksdb
type GcsFaultToleranceBackend string

const (
	// GcsFTBackendRedis keeps the GCS state in an external Redis.
	GcsFTBackendRedis GcsFaultToleranceBackend = "redis"
	// GcsFTBackendRocksDB keeps it in RocksDB on a volume of the head Pod.
	GcsFTBackendRocksDB GcsFaultToleranceBackend = "rocksdb"
)

// GcsEmbeddedStorage is the PersistentVolumeClaim of the rocksdb backend:
// an existing claim (ClaimName) or one the operator creates (Size,
// StorageClassName, AccessModes).
type GcsEmbeddedStorage struct {
	// ClaimName is an existing claim the user owns.
	// +optional
	ClaimName string `json:"claimName,omitempty"`
	// Size of the operator's claim (1Gi by default).
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// StorageClassName of the operator's claim.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// AccessModes of the operator's claim (ReadWriteOnce by default).
	// +optional
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// SubPath mounts a directory of the volume instead of its root.
	// +optional
	SubPath string `json:"subPath,omitempty"`
	// DeletionPolicy says whether the operator's claim goes with the cluster.
	// +optional
	DeletionPolicy *GCSStorageDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// GCSStorageDeletionPolicy is what happens to the operator's claim when
// the cluster is deleted.
// +kubebuilder:validation:Enum=DeleteWithCluster;Retain
type GCSStorageDeletionPolicy string

const (
	// DeleteWithClusterGCSStorageDeletionPolicy deletes the claim with the
	// cluster (the default).
	DeleteWithClusterGCSStorageDeletionPolicy GCSStorageDeletionPolicy = "DeleteWithCluster"
	// RetainGCSStorageDeletionPolicy keeps it.
	RetainGCSStorageDeletionPolicy GCSStorageDeletionPolicy = "Retain"
)

// HistoryServerOptions configures KubeRay's history-server collector.
type HistoryServerOptions struct {
	// CollectorOptions configures the collector sidecar.
	// +optional
	CollectorOptions *CollectorOptions `json:"collectorOptions,omitempty"`
}

// CollectorOptions configures the history-server collector sidecar.
type CollectorOptions struct {
	// Image of the collector.
	// +optional
	Image *string `json:"image,omitempty"`
	// ImagePullPolicy of the collector image.
	// +optional
	ImagePullPolicy *corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// Resources of the collector container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Env is added to the collector container.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// NetworkPolicyMode is which direction of traffic the policies deny.
// +kubebuilder:validation:Enum=DenyAll;DenyAllIngress;DenyAllEgress
type NetworkPolicyMode string

const (
	// NetworkPolicyDenyAll denies ingress and egress.
	NetworkPolicyDenyAll NetworkPolicyMode = "DenyAll"
	// NetworkPolicyDenyAllIngress denies ingress.
	NetworkPolicyDenyAllIngress NetworkPolicyMode = "DenyAllIngress"
	// NetworkPolicyDenyAllEgress denies egress.
	NetworkPolicyDenyAllEgress NetworkPolicyMode = "DenyAllEgress"
)

// NetworkPolicyConfig is the isolation asked for the cluster's Pods; traffic
// between the cluster's own Pods is always allowed.
type NetworkPolicyConfig struct {
	// Mode is DenyAll (the default), DenyAllIngress or DenyAllEgress.
	// +kubebuilder:default=DenyAll
	// +optional
	Mode *NetworkPolicyMode `json:"mode,omitempty"`
	// Head rules are added to the head Pod's policy.
	// +optional
	Head *NetworkPolicyRules `json:"head,omitempty"`
	// Worker rules are added to every worker group's policy unless the
	// group has its own entry in WorkerGroups.
	// +optional
	Worker *NetworkPolicyRules `json:"worker,omitempty"`
	// WorkerGroups replace Worker for the groups they name.
	// +listType=map
	// +listMapKey=groupName
	// +optional
	WorkerGroups []WorkerGroupNetworkPolicyRules `json:"workerGroups,omitempty"`
}

// WorkerGroupNetworkPolicyRules are the rules of one worker group.
type WorkerGroupNetworkPolicyRules struct {
	// GroupName is the worker group's name.
	// +kubebuilder:validation:Required
	GroupName string `json:"groupName"`

	NetworkPolicyRules `json:",inline"`
}

// NetworkPolicyRules are extra rules added to a policy.
type NetworkPolicyRules struct {
	// IngressRules are added when the mode denies ingress.
	// +optional
	IngressRules []networkingv1.NetworkPolicyIngressRule `json:"ingressRules,omitempty"`
	// EgressRules are added when the mode denies egress; DNS is not allowed
	// unless a rule here allows it.
	// +optional
	EgressRules []networkingv1.NetworkPolicyEgressRule `json:"egressRules,omitempty"`
}

// TLSOptions turns on mutual TLS between the cluster's Ray nodes.
type TLSOptions struct {
	// Enabled turns it on; unset means off.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// RedisCredential is either a literal value or a reference to one, with the
// same shape as a container env var so a Secret reference reads naturally.
type RedisCredential struct {
	// +optional
	ValueFrom *corev1.EnvVarSource `json:"valueFrom,omitempty"`
	// +optional
	Value string `json:"value,omitempty"`
}

// HeadGroupSpec describes the head Pod and its Service.
type HeadGroupSpec struct {
	// Template is the head Pod's template; the Ray container must be the
	// first container.
	Template corev1.PodTemplateSpec `json:"template"`

	// HeadService overrides fields of the generated head Service.
	// +optional
	HeadService *corev1.Service `json:"headService,omitempty"`

	// EnableIngress creates an Ingress for the dashboard.
	// +optional
	EnableIngress *bool `json:"enableIngress,omitempty"`

	// IngressOptions sets the host, path and TLS of that Ingress
	// (KubeRay v1.7).
	// +optional
	IngressOptions *IngressOptions `json:"ingressOptions,omitempty"`

	// Resources are Ray logical resources for the head node; they take
	// precedence over the same resources in rayStartParams and do not change
	// the Pod's Kubernetes resources.
	// +optional
	Resources map[string]string `json:"resources,omitempty"`

	// Labels are Ray node labels for the head node; they are also put on the
	// head Pod and take precedence over --labels in rayStartParams.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// RayStartParams become `ray start` flags (key without the leading --).
	// Null is accepted as none: Kueue's RayCluster webhook sends null
	// for an omitted rayStartParams.
	// +optional
	// +nullable
	RayStartParams map[string]string `json:"rayStartParams,omitempty"`

	// ServiceType is the type of the head Service (ClusterIP by default).
	// +optional
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`
}

// IngressPathType is how the Ingress matches its path.
// +kubebuilder:validation:Enum=Exact;Prefix;ImplementationSpecific
type IngressPathType string

const (
	// IngressPathTypeExact matches the path exactly.
	IngressPathTypeExact IngressPathType = "Exact"
	// IngressPathTypePrefix matches the path as a prefix (the default).
	IngressPathTypePrefix IngressPathType = "Prefix"
	// IngressPathTypeImplementationSpecific leaves matching to the
	// IngressClass.
	IngressPathTypeImplementationSpecific IngressPathType = "ImplementationSpecific"
)

// IngressOptions shapes the head's dashboard Ingress.
type IngressOptions struct {
	// Host the rule matches; unset matches every host.
	// +optional
	Host *string `json:"host,omitempty"`
	// Path routed to the dashboard; "/" when unset.
	// +optional
	Path *string `json:"path,omitempty"`
	// PathType of Path; Prefix when unset.
	// +optional
	PathType *IngressPathType `json:"pathType,omitempty"`
	// TLS of the Ingress.
	// +optional
	TLS []networkingv1.IngressTLS `json:"tls,omitempty"`
}

// WorkerGroupSpec describes one group of identical worker Pods.
type WorkerGroupSpec struct {
	// Suspend deletes this group's Pods. KubeRay reserves it for RayJob's
	// deletion strategy rather than for users.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// GroupName identifies the group; it must be unique in the cluster.
	GroupName string `json:"groupName"`

	// Replicas is the desired number of replicas, clamped to
	// [minReplicas, maxReplicas]. The autoscaler writes it when enabled.
	// +kubebuilder:default:=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// MinReplicas is the lower bound on replicas.
	// +kubebuilder:default:=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the upper bound on replicas.
	// +kubebuilder:default:=2147483647
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// IdleTimeoutSeconds overrides, for this group, how long the autoscaler
	// v2 waits before removing an idle worker.
	// +optional
	IdleTimeoutSeconds *int32 `json:"idleTimeoutSeconds,omitempty"`

	// Priority ranks this group for the autoscaler v2 (Ray >= 2.56) when
	// several groups could take the same demand; higher goes first. The
	// autoscaler reads it; the operator only checks it.
	// +kubebuilder:default:=0
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Resources are Ray logical resources for this group's nodes; see
	// HeadGroupSpec.Resources.
	// +optional
	Resources map[string]string `json:"resources,omitempty"`

	// Labels are Ray node labels for this group's nodes; see
	// HeadGroupSpec.Labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// RayStartParams become `ray start` flags for this group's Pods.
	// Null is accepted as none: Kueue's RayCluster webhook sends null
	// for an omitted rayStartParams.
	// +optional
	// +nullable
	RayStartParams map[string]string `json:"rayStartParams,omitempty"`

	// Template is the worker Pod template; the Ray container must be the
	// first container.
	Template corev1.PodTemplateSpec `json:"template"`

	// ScaleStrategy lists specific Pods to remove when scaling down.
	// +optional
	ScaleStrategy ScaleStrategy `json:"scaleStrategy,omitempty"`

	// NumOfHosts is the number of Pods per replica. Values above 1 model
	// multi-host accelerator slices (e.g. TPU pod slices) that are created,
	// counted and deleted as one unit.
	// +kubebuilder:default:=1
	// +optional
	NumOfHosts int32 `json:"numOfHosts,omitempty"`
}

// ScaleStrategy names the Pods to delete on the next scale-down.
type ScaleStrategy struct {
	// WorkersToDelete are Pod names, written by the autoscaler so it can pick
	// idle workers rather than arbitrary ones.
	// +optional
	WorkersToDelete []string `json:"workersToDelete,omitempty"`
}

// AutoscalerOptions configures the autoscaler sidecar container.
type AutoscalerOptions struct {
	// Resources of the autoscaler container; the operator's default is
	// 500m CPU and 512Mi memory (requests equal limits).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Image overrides the autoscaler image (the Ray image by default).
	// +optional
	Image *string `json:"image,omitempty"`

	// ImagePullPolicy overrides the autoscaler image pull policy.
	// +optional
	ImagePullPolicy *corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// SecurityContext of the autoscaler container.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`

	// IdleTimeoutSeconds is read by the autoscaler, not the operator
	// (autoscaler default: 60).
	// +optional
	IdleTimeoutSeconds *int32 `json:"idleTimeoutSeconds,omitempty"`

	// UpscalingMode is read by the autoscaler, not the operator.
	// +optional
	UpscalingMode *UpscalingMode `json:"upscalingMode,omitempty"`

	// Version selects autoscaler v1 or v2. Only v2 turns v2 on (and
	// restartPolicy Never where the user set none); unset leaves Ray its
	// default, as KubeRay v1.6 does.
	// +optional
	Version *AutoscalerVersion `json:"version,omitempty"`

	// Env is added to the autoscaler container.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// EnvFrom is added to the autoscaler container.
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// VolumeMounts are added to the autoscaler container, e.g. TLS material.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// Command replaces the autoscaler container's command (KubeRay v1.7).
	// +optional
	Command []string `json:"command,omitempty"`

	// Args replace its args; they can run the generated start command as
	// $KUBERAY_GEN_AUTOSCALER_START_CMD, e.g. "ulimit -n 65536;
	// $KUBERAY_GEN_AUTOSCALER_START_CMD" (KubeRay v1.7).
	// +optional
	Args []string `json:"args,omitempty"`
}

// UpscalingMode is how eagerly the autoscaler adds workers. Default and
// Aggressive are the same; Conservative caps pending workers at the
// cluster's current size.
// +kubebuilder:validation:Enum=Default;Aggressive;Conservative
type UpscalingMode string

const (
	UpscalingModeDefault      UpscalingMode = "Default"
	UpscalingModeAggressive   UpscalingMode = "Aggressive"
	UpscalingModeConservative UpscalingMode = "Conservative"
)

// AutoscalerVersion selects the autoscaler implementation.
// +kubebuilder:validation:Enum=v1;v2
type AutoscalerVersion string

const (
	AutoscalerVersionV1 AutoscalerVersion = "v1"
	AutoscalerVersionV2 AutoscalerVersion = "v2"
)

// RayCluster runs one Ray head Pod and any number of worker groups.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="desired workers",type=integer,JSONPath=".status.desiredWorkerReplicas",priority=0
// +kubebuilder:printcolumn:name="available workers",type=integer,JSONPath=".status.availableWorkerReplicas",priority=0
// +kubebuilder:printcolumn:name="cpus",type=string,JSONPath=".status.desiredCPU",priority=0
// +kubebuilder:printcolumn:name="memory",type=string,JSONPath=".status.desiredMemory",priority=0
// +kubebuilder:printcolumn:name="gpus",type=string,JSONPath=".status.desiredGPU",priority=0
// +kubebuilder:printcolumn:name="tpus",type=string,JSONPath=".status.desiredTPU",priority=1
// +kubebuilder:printcolumn:name="status",type=string,JSONPath=".status.state",priority=0
// +kubebuilder:printcolumn:name="age",type=date,JSONPath=".metadata.creationTimestamp",priority=0
// +kubebuilder:printcolumn:name="head pod IP",type=string,JSONPath=".status.head.podIP",priority=1
// +kubebuilder:printcolumn:name="head service IP",type=string,JSONPath=".status.head.serviceIP",priority=1
type RayCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RayClusterSpec `json:"spec,omitempty"`
	// +optional
	Status RayClusterStatus `json:"status,omitempty"`
}

// RayClusterList is a list of RayClusters.
// +kubebuilder:object:root=true
type RayClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RayCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RayCluster{}, &RayClusterList{})
}
