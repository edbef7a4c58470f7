package v1

// Labels Gantry puts on the Pods and Services of a RayCluster. The keys and
// values are KubeRay's: users select on them (kubectl, PodMonitors,
// NetworkPolicies) and the Ray autoscaler reads them, so they must not drift.
const (
	// RayClusterLabelKey's value is the owning RayCluster's name.
	RayClusterLabelKey = "ray.io/cluster"
	// RayNodeTypeLabelKey's value is a RayNodeType (head, worker, redis-cleanup).
	RayNodeTypeLabelKey = "ray.io/node-type"
	// RayNodeGroupLabelKey's value is the worker group name, or
	// RayNodeHeadGroupLabelValue on the head Pod. The autoscaler maps Pods
	// to node types by it.
	RayNodeGroupLabelKey = "ray.io/group"
	// RayNodeLabelKey is RayNodeLabelValue on every head and worker Pod.
	RayNodeLabelKey = "ray.io/is-ray-node"
	// RayIDLabelKey identifies a cluster's head or workers as one set.
	RayIDLabelKey = "ray.io/identifier"
	// RayClusterServingServiceLabelKey marks Pods that receive Serve traffic
	// ("true"/"false").
	RayClusterServingServiceLabelKey = "ray.io/serve"
	// RayClusterHeadlessServiceLabelKey marks the headless Service of
	// multi-host worker groups.
	RayClusterHeadlessServiceLabelKey = "ray.io/headless-worker-svc"
	// RayOriginatedFromCRNameLabelKey and RayOriginatedFromCRDLabelKey name
	// the RayJob or RayService a cluster was created for.
	RayOriginatedFromCRNameLabelKey = "ray.io/originated-from-cr-name"
	RayOriginatedFromCRDLabelKey    = "ray.io/originated-from-crd"

	// Batch-scheduler labels read from the RayCluster (KubeRay v1.6).
	// RayPriorityClassName goes onto Volcano's PodGroup and Pods;
	// RayGangSchedulingEnabled (any value) asks YuniKorn and
	// scheduler-plugins for gang scheduling.
	RayPriorityClassName     = "ray.io/priority-class-name"
	RayGangSchedulingEnabled = "ray.io/gang-scheduling-enabled"

	// Multi-host worker group labels. RayWorkerReplicaNameKey groups the
	// numOfHosts Pods of one replica so they are deleted together;
	// RayWorkerReplicaIndexKey is the replica's ordinal within the group
	// (TPU multi-slice needs it) and RayHostIndexKey the Pod's ordinal within
	// its replica.
	RayWorkerReplicaNameKey  = "ray.io/worker-group-replica-name"
	RayWorkerReplicaIndexKey = "ray.io/worker-group-replica-index"
	RayHostIndexKey          = "ray.io/replica-host-index"

	// RayNodeLabelValue is the value of RayNodeLabelKey.
	RayNodeLabelValue = "yes"
	// RayNodeHeadGroupLabelValue is the value of RayNodeGroupLabelKey on the head Pod.
	RayNodeHeadGroupLabelValue = "headgroup"
)

// Annotations read from the RayCluster or written on its Pods.
const (
	// RayFTEnabledAnnotationKey="true" (any case) on a RayCluster enables GCS
	// fault tolerance the pre-gcsFaultToleranceOptions way; it is also put on
	// Pods to tell them apart.
	RayFTEnabledAnnotationKey = "ray.io/ft-enabled"
	// RayExternalStorageNSAnnotationKey is the older way to set
	// gcsFaultToleranceOptions.externalStorageNamespace.
	RayExternalStorageNSAnnotationKey = "ray.io/external-storage-namespace"
	// RayOverwriteContainerCmdAnnotationKey="true" leaves the Ray container's
	// command as the user wrote it; the generated `ray start` line is still
	// exposed in the KUBERAY_GEN_RAY_START_CMD env var.
	RayOverwriteContainerCmdAnnotationKey = "ray.io/overwrite-container-cmd"
	// DisableProvisionedHeadRestartAnnotationKey="true" stops the operator
	// from re-creating a failed head Pod once the cluster was provisioned;
	// RayJob sets it because a new head cannot resume the submitted job.
	DisableProvisionedHeadRestartAnnotationKey = "ray.io/disable-provisioned-head-restart"
	// EnableServeServiceKey="true" on a RayCluster makes the operator create
	// the Serve Service for a cluster not owned by a RayService.
	EnableServeServiceKey  = "ray.io/enable-serve-service"
	EnableServeServiceTrue = "true"

	// UpgradeStrategyRecreateHashKey holds, on the head Pod, the hash of the
	// spec it was built from; a different hash under upgradeStrategy
	// Recreate means the Pods are stale.
	UpgradeStrategyRecreateHashKey = "ray.io/upgrade-strategy-recreate-hash"
	// KubeRayVersion records the operator version that built a Pod, so an
	// operator upgrade (which may change generated fields) does not count as
	// a spec change.
	KubeRayVersion = "ray.io/kuberay-version"
	// HashWithoutReplicasAndWorkersToDeleteKey and NumWorkerGroupsKey are
	// written by RayService to detect spec changes of its clusters.
	HashWithoutReplicasAndWorkersToDeleteKey = "ray.io/hash-without-replicas-and-workers-to-delete"
	NumWorkerGroupsKey                       = "ray.io/num-worker-groups"
)

// GCSFaultToleranceRedisCleanupFinalizer holds a deleted GCS fault-tolerant
// RayCluster until a Job has removed its keys from Redis; without it the
// keys would leak, and a new cluster with the same storage namespace would
// load a dead cluster's state.
const GCSFaultToleranceRedisCleanupFinalizer = "ray.io/gcs-ft-redis-cleanup-finalizer"

// Values of spec.managedBy.
const (
	// KubeRayController is the built-in controller; Gantry answers to it.
	KubeRayController = "ray.io/kuberay-operator"
	// MultiKueueController means Kueue's MultiKueue owns the cluster.
	MultiKueueController = "kueue.x-k8s.io/multikueue"
)

// EventReason is the reason of a Kubernetes Event about a RayCluster. The
// values are KubeRay's so alerts keyed on them keep working.
type EventReason string

const (
	InvalidRayClusterStatus   EventReason = "InvalidRayClusterStatus"
	InvalidRayClusterSpec     EventReason = "InvalidRayClusterSpec"
	InvalidRayClusterMetadata EventReason = "InvalidRayClusterMetadata"

	CreatedHeadPod        EventReason = "CreatedHeadPod"
	FailedToCreateHeadPod EventReason = "FailedToCreateHeadPod"
	DeletedHeadPod        EventReason = "DeletedHeadPod"
	FailedToDeleteHeadPod EventReason = "FailedToDeleteHeadPod"

	CreatedWorkerPod                  EventReason = "CreatedWorkerPod"
	FailedToCreateWorkerPod           EventReason = "FailedToCreateWorkerPod"
	DeletedWorkerPod                  EventReason = "DeletedWorkerPod"
	FailedToDeleteWorkerPod           EventReason = "FailedToDeleteWorkerPod"
	FailedToDeleteWorkerPodCollection EventReason = "FailedToDeleteWorkerPodCollection"

	DeletedPod                  EventReason = "DeletedPod"
	FailedToDeletePod           EventReason = "FailedToDeletePod"
	FailedToDeletePodCollection EventReason = "FailedToDeletePodCollection"

	CreatedRedisCleanupJob        EventReason = "CreatedRedisCleanupJob"
	FailedToCreateRedisCleanupJob EventReason = "FailedToCreateRedisCleanupJob"

	CreatedService        EventReason = "CreatedService"
	FailedToCreateService EventReason = "FailedToCreateService"
	CreatedIngress        EventReason = "CreatedIngress"
	FailedToCreateIngress EventReason = "FailedToCreateIngress"
)
