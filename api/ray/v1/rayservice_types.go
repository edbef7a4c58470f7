package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RayService is KubeRay v1.7.0's API: a RayCluster that runs Ray Serve
// applications (serveConfigV2), kept serving while its cluster is replaced.

// ServiceStatus is the deprecated one-word state of a RayService: Running
// when it is Ready, empty otherwise.
type ServiceStatus string

const (
	Running    ServiceStatus = "Running"
	NotRunning ServiceStatus = ""
)

// RayServiceUpgradeType is how a change to rayClusterConfig is rolled out.
type RayServiceUpgradeType string

const (
	// RayServiceNewClusterWithIncrementalUpgrade moves traffic step by step
	// through a Gateway (KubeRay v1.7.0's RayServiceIncrementalUpgrade gate,
	// beta). Gantry does not implement it yet and refuses it at admission.
	RayServiceNewClusterWithIncrementalUpgrade RayServiceUpgradeType = "NewClusterWithIncrementalUpgrade"
	// RayServiceNewCluster starts a new cluster and switches the Services to
	// it once its Serve applications run (zero downtime).
	RayServiceNewCluster RayServiceUpgradeType = "NewCluster"
	// RayServiceUpgradeNone never replaces the cluster.
	RayServiceUpgradeNone RayServiceUpgradeType = "None"
)

// Serve application and deployment states, as Ray's dashboard reports them.
const (
	ApplicationStatusNotStarted   = "NOT_STARTED"
	ApplicationStatusDeploying    = "DEPLOYING"
	ApplicationStatusRunning      = "RUNNING"
	ApplicationStatusDeployFailed = "DEPLOY_FAILED"
	ApplicationStatusDeleting     = "DELETING"
	ApplicationStatusUnhealthy    = "UNHEALTHY"

	DeploymentStatusUpdating  = "UPDATING"
	DeploymentStatusHealthy   = "HEALTHY"
	DeploymentStatusUnhealthy = "UNHEALTHY"
)

// ClusterUpgradeOptions configure NewClusterWithIncrementalUpgrade.
type ClusterUpgradeOptions struct {
	// The share of Serve capacity the new cluster scales to at each step.
	// +kubebuilder:default:=100
	MaxSurgePercent *int32 `json:"maxSurgePercent,omitempty"`
	// The share of traffic moved to the new cluster at each interval; at
	// most maxSurgePercent.
	StepSizePercent *int32 `json:"stepSizePercent"`
	// Seconds between traffic steps.
	IntervalSeconds *int32 `json:"intervalSeconds"`
	// The Gateway class the cluster admin installed.
	GatewayClassName string `json:"gatewayClassName"`
}

// RayServiceUpgradeStrategy is how a RayService rolls out a new cluster.
type RayServiceUpgradeStrategy struct {
	// Type is NewCluster, NewClusterWithIncrementalUpgrade or None.
	// +optional
	Type *RayServiceUpgradeType `json:"type,omitempty"`
	// ClusterUpgradeOptions configure NewClusterWithIncrementalUpgrade.
	ClusterUpgradeOptions *ClusterUpgradeOptions `json:"clusterUpgradeOptions,omitempty"`
}

// RayServiceSpec is the desired state of a RayService.
type RayServiceSpec struct {
	// RayClusterDeletionDelaySeconds is how long a replaced RayCluster is
	// kept before it is deleted; 60 by default.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RayClusterDeletionDelaySeconds *int32 `json:"rayClusterDeletionDelaySeconds,omitempty"`
	// Deprecated: not used (KubeRay #1685).
	// +optional
	ServiceUnhealthySecondThreshold *int32 `json:"serviceUnhealthySecondThreshold,omitempty"`
	// Deprecated: not used (KubeRay #1685).
	// +optional
	DeploymentUnhealthySecondThreshold *int32 `json:"deploymentUnhealthySecondThreshold,omitempty"`
	// ServeService is the starting point of the Serve Service, which selects
	// the Pods whose Serve proxy is healthy.
	// +optional
	ServeService *corev1.Service `json:"serveService,omitempty"`
	// UpgradeStrategy is how a change to rayClusterConfig is rolled out.
	// +optional
	UpgradeStrategy *RayServiceUpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// ManagedBy is the controller that reconciles this RayService:
	// 'ray.io/kuberay-operator' (Gantry) or 'kueue.x-k8s.io/multikueue'.
	// Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the managedBy field is immutable"
	// +kubebuilder:validation:XValidation:rule="self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",message="the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
	// ServeConfigV2 is Ray Serve's config (applications and deployments), as
	// a YAML multi-line string.
	// +optional
	ServeConfigV2  string         `json:"serveConfigV2,omitempty"`
	RayClusterSpec RayClusterSpec `json:"rayClusterConfig"`
	// ExcludeHeadPodFromServeSvc keeps the head Pod's ray.io/serve label
	// "false", so the Serve Service never sends it traffic.
	// +optional
	ExcludeHeadPodFromServeSvc bool `json:"excludeHeadPodFromServeSvc,omitempty"`
	// Suspend deletes every object the RayService owns; false creates them
	// again.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RayServiceStatuses is the observed state of a RayService.
type RayServiceStatuses struct {
	// Conditions: Ready, UpgradeInProgress, RollbackInProgress, Suspending,
	// Suspended.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// LastUpdateTime is when the status last changed.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// Deprecated: use the Ready condition. Running when Ready.
	// +optional
	ServiceStatus ServiceStatus `json:"serviceStatus,omitempty"`
	// ActiveServiceStatus is the cluster serving traffic.
	// +optional
	ActiveServiceStatus RayServiceStatus `json:"activeServiceStatus,omitempty"`
	// PendingServiceStatus is the cluster being prepared to replace it.
	// +optional
	PendingServiceStatus RayServiceStatus `json:"pendingServiceStatus,omitempty"`
	// NumServeEndpoints is the number of ready Pods the Serve Service
	// selects.
	// +optional
	NumServeEndpoints int32 `json:"numServeEndpoints,omitempty"`
	// ObservedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// RayServiceStatus is one cluster of a RayService and its Serve
// applications.
type RayServiceStatus struct {
	// Applications are the Serve applications by name.
	// +optional
	Applications map[string]AppStatus `json:"applicationStatuses,omitempty"`
	// TargetCapacity is Serve's target_capacity on this cluster (incremental
	// upgrade).
	// +optional
	TargetCapacity *int32 `json:"targetCapacity,omitempty"`
	// TrafficRoutedPercent is the share of traffic routed to this cluster
	// (incremental upgrade).
	// +optional
	TrafficRoutedPercent *int32 `json:"trafficRoutedPercent,omitempty"`
	// LastTrafficMigratedTime is when TrafficRoutedPercent last changed.
	// +optional
	LastTrafficMigratedTime *metav1.Time `json:"lastTrafficMigratedTime,omitempty"`
	// +optional
	RayClusterName string `json:"rayClusterName,omitempty"`
	// +optional
	RayClusterStatus RayClusterStatus `json:"rayClusterStatus,omitempty"`
}

// AppStatus is one Serve application.
type AppStatus struct {
	// +optional
	Deployments map[string]ServeDeploymentStatus `json:"serveDeploymentStatuses,omitempty"`
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ServeDeploymentStatus is one Serve deployment.
type ServeDeploymentStatus struct {
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

type (
	// RayServiceConditionType is a condition type of a RayService.
	RayServiceConditionType string
	// RayServiceConditionReason is a condition reason of a RayService.
	RayServiceConditionReason string
)

const (
	// RayServiceReady: the Serve Service has at least one ready endpoint.
	RayServiceReady RayServiceConditionType = "Ready"
	// UpgradeInProgress: a pending cluster is being prepared.
	UpgradeInProgress RayServiceConditionType = "UpgradeInProgress"
	// RollbackInProgress: an incremental upgrade is rolled back (not used
	// by Gantry, which refuses incremental upgrades).
	RollbackInProgress RayServiceConditionType = "RollbackInProgress"
	// RayServiceSuspending: the owned objects are being deleted for
	// spec.suspend; once started it runs to its end.
	RayServiceSuspending RayServiceConditionType = "Suspending"
	// RayServiceSuspended: every owned object is gone.
	RayServiceSuspended RayServiceConditionType = "Suspended"
)

const (
	RayServiceInitializing         RayServiceConditionReason = "Initializing"
	RayServiceInitializingTimeout  RayServiceConditionReason = "InitializingTimeout"
	ZeroServeEndpoints             RayServiceConditionReason = "ZeroServeEndpoints"
	NonZeroServeEndpoints          RayServiceConditionReason = "NonZeroServeEndpoints"
	BothActivePendingClustersExist RayServiceConditionReason = "BothActivePendingClustersExist"
	NoPendingCluster               RayServiceConditionReason = "NoPendingCluster"
	NoActiveCluster                RayServiceConditionReason = "NoActiveCluster"
	RayServiceValidationFailed     RayServiceConditionReason = "ValidationFailed"
	DesiredClusterSpecChanged      RayServiceConditionReason = "DesiredClusterSpecChanged"
	SuspendRequested               RayServiceConditionReason = "SuspendRequested"
	SuspendInProgress              RayServiceConditionReason = "SuspendInProgress"
	SuspendComplete                RayServiceConditionReason = "SuspendComplete"
	RayServiceResumed              RayServiceConditionReason = "RayServiceResumed"
)

// RayService runs Ray Serve applications on a RayCluster it owns, and
// replaces the cluster without downtime when its spec changes.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="service status",type=string,JSONPath=".status.serviceStatus"
// +kubebuilder:printcolumn:name="num serve endpoints",type=string,JSONPath=".status.numServeEndpoints"
type RayService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RayServiceSpec `json:"spec,omitempty"`
	// +optional
	Status RayServiceStatuses `json:"status,omitempty"`
}

// RayServiceList is a list of RayServices.
// +kubebuilder:object:root=true
type RayServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RayService `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RayService{}, &RayServiceList{})
}
