package v1

// Names a RayService and what it creates carry; the values are KubeRay
// v1.7.0's, so that tools and alerts written for KubeRay keep working.
const (
	// RayServiceFinalizer holds a deleted RayService until its RayClusters
	// are gone.
	RayServiceFinalizer = "ray.io/rayservice-finalizer"
	// RayServiceInitializingTimeoutAnnotation bounds how long a RayService
	// may stay Initializing (a Go duration such as "30m", or whole
	// seconds). Past it the RayService fails for good (Ready=False,
	// InitializingTimeout) and its clusters are deleted.
	RayServiceInitializingTimeoutAnnotation = "ray.io/initializing-timeout"
	// EnableRayClusterServingServiceTrue and ...False are the values of the
	// ray.io/serve label.
	EnableRayClusterServingServiceTrue  = "true"
	EnableRayClusterServingServiceFalse = "false"
	// DefaultServeAppName names a Serve application reported without a
	// name.
	DefaultServeAppName = "default"
	// RayServeProxyHealthPath is the Serve proxy's health check on the
	// serving port.
	RayServeProxyHealthPath = "/-/healthz"
	// MaxRayServiceNameLength keeps "<name>-<5 random>" a valid RayCluster
	// name (KubeRay's MaxRayClusterNameLength - 6).
	MaxRayServiceNameLength = 47
)

// Event reasons about a RayService (KubeRay's).
const (
	InvalidRayServiceSpec     EventReason = "InvalidRayServiceSpec"
	InvalidRayServiceMetadata EventReason = "InvalidRayServiceMetadata"
	// RayServiceInitializingTimeoutEvent is the event reason of that timeout.
	RayServiceInitializingTimeoutEvent EventReason = "RayServiceInitializingTimeout"
	UpdatedHeadPodServeLabel           EventReason = "UpdatedHeadPodServeLabel"
	FailedToUpdateHeadPodServeLabel    EventReason = "FailedToUpdateHeadPodServeLabel"
	UpdatedServeApplications           EventReason = "UpdatedServeApplications"
	FailedToUpdateServeApplications    EventReason = "FailedToUpdateServeApplications"
	DeletedService                     EventReason = "DeletedService"
	FailedToDeleteService              EventReason = "FailedToDeleteService"
)
