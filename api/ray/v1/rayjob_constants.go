package v1

// Names a RayJob and what it creates carry; the values are KubeRay's, so
// that tools and alerts written for KubeRay keep working.
const (
	// RayJobStopJobFinalizer holds a deleted RayJob until its Ray job was
	// asked to stop.
	RayJobStopJobFinalizer = "ray.io/rayjob-finalizer"
	// RayJobClusterSelectorKey is the clusterSelector key that names the
	// existing RayCluster a RayJob runs on.
	RayJobClusterSelectorKey = "ray.io/cluster"
	// RayJobSubmissionModeLabelKey on a RayJob's cluster holds the
	// submission mode.
	RayJobSubmissionModeLabelKey = "ray.io/job-submission-mode"
	// KubernetesCreatedByLabelKey is app.kubernetes.io/created-by; KubeRay
	// puts ComponentName there.
	KubernetesCreatedByLabelKey = "app.kubernetes.io/created-by"
	// ComponentName is the created-by value of the objects KubeRay's
	// operator (and Gantry, standing in for it) creates.
	ComponentName = "kuberay-operator"
	// RayNodeSubmitterGroupLabelValue is the batch scheduler's task group of
	// the submitter Pod.
	RayNodeSubmitterGroupLabelValue = "submittergroup"
	// SubmitterContainerName names the container SidecarMode adds to the
	// head Pod.
	SubmitterContainerName = "ray-job-submitter"
	// RayDashboardAddressEnv and RayJobSubmissionIDEnv are set in the
	// submitter container for a user's own `ray job submit` command.
	RayDashboardAddressEnv = "RAY_DASHBOARD_ADDRESS"
	RayJobSubmissionIDEnv  = "RAY_JOB_SUBMISSION_ID"
)

// RayJob event reasons, as KubeRay records them.
const (
	InvalidRayJobSpec             EventReason = "InvalidRayJobSpec"
	InvalidRayJobMetadata         EventReason = "InvalidRayJobMetadata"
	InvalidRayJobStatus           EventReason = "InvalidRayJobStatus"
	CreatedRayJobSubmitter        EventReason = "CreatedRayJobSubmitter"
	DeletedRayJobSubmitter        EventReason = "DeletedRayJobSubmitter"
	FailedToCreateRayJobSubmitter EventReason = "FailedToCreateRayJobSubmitter"
	FailedToDeleteRayJobSubmitter EventReason = "FailedToDeleteRayJobSubmitter"
	CreatedRayCluster             EventReason = "CreatedRayCluster"
	UpdatedRayCluster             EventReason = "UpdatedRayCluster"
	DeletedRayCluster             EventReason = "DeletedRayCluster"
	FailedToCreateRayCluster      EventReason = "FailedToCreateRayCluster"
	FailedToDeleteRayCluster      EventReason = "FailedToDeleteRayCluster"
	FailedToUpdateRayCluster      EventReason = "FailedToUpdateRayCluster"
	RayClusterNotFound            EventReason = "RayClusterNotFound"
	UpdatedService                EventReason = "UpdatedService"
	FailedToUpdateService         EventReason = "FailedToUpdateService"
)

// AnnotationRayDashboardURL on a RayCluster (a RayJob passes its
// annotations on to the cluster it creates) is the dashboard base URL the
// manager uses instead of the head Service's, for a manager that runs
// outside the cluster. Gantry's; honoured only with
// --feature-gates=RayDashboardURLOverride=true.
const AnnotationRayDashboardURL = "gantry.dev/ray-dashboard-url"

// AnnotationRayServeProxyURL on a RayCluster (a RayService passes its
// annotations on to its clusters) is the base URL of the head's Serve
// proxy, whose /-/healthz the RayService controller checks, instead of the
// head Pod's IP. Gantry's; honoured only with
// --feature-gates=RayDashboardURLOverride=true.
const AnnotationRayServeProxyURL = "gantry.dev/ray-serve-proxy-url"
