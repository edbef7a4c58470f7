package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterState is the coarse state shown in `kubectl get raycluster`.
// KubeRay deprecates it in favour of Conditions but still sets it, and
// dashboards and scripts read it, so Gantry keeps setting it too.
type ClusterState string

const (
	// Ready: every desired Pod is running and ready (at least once).
	Ready ClusterState = "ready"
	// Failed is no longer set; it stays so code that imports it compiles.
	Failed ClusterState = "failed"
	// Suspended: spec.suspend is true and all Pods are gone.
	Suspended ClusterState = "suspended"
)

// RayClusterStatus is the observed state of a RayCluster. The worker counts
// are Pods, not replicas: a replica of a multi-host group is numOfHosts Pods.
// The field names keep "Replicas" for compatibility.
type RayClusterStatus struct {
	// State is the coarse cluster state.
	// Deprecated: use Conditions.
	// +optional
	State ClusterState `json:"state,omitempty"`

	// DesiredCPU is the total CPU the cluster's desired Pods request.
	// +optional
	DesiredCPU resource.Quantity `json:"desiredCPU,omitempty"`
	// DesiredMemory is the total memory the cluster's desired Pods request.
	// +optional
	DesiredMemory resource.Quantity `json:"desiredMemory,omitempty"`
	// DesiredGPU is the total of every GPU-like resource the desired Pods request.
	// +optional
	DesiredGPU resource.Quantity `json:"desiredGPU,omitempty"`
	// DesiredTPU is the total google.com/tpu the desired Pods request.
	// +optional
	DesiredTPU resource.Quantity `json:"desiredTPU,omitempty"`

	// LastUpdateTime is when the status was last written.
	// +nullable
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`

	// StateTransitionTimes records, per state, when the cluster last entered it.
	// +optional
	StateTransitionTimes map[ClusterState]*metav1.Time `json:"stateTransitionTimes,omitempty"`

	// Endpoints maps head Service port names to port numbers.
	// +optional
	Endpoints map[string]string `json:"endpoints,omitempty"`

	// Head locates the head Pod and Service.
	// +optional
	Head HeadInfo `json:"head,omitempty"`

	// Reason explains State when it is not self-explanatory.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Conditions are the detailed state; see RayClusterConditionType.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ReadyWorkerReplicas counts worker Pods that are running and ready.
	// +optional
	ReadyWorkerReplicas int32 `json:"readyWorkerReplicas,omitempty"`
	// AvailableWorkerReplicas counts worker Pods that are running.
	// +optional
	AvailableWorkerReplicas int32 `json:"availableWorkerReplicas,omitempty"`
	// DesiredWorkerReplicas is the sum over groups of replicas × numOfHosts.
	// +optional
	DesiredWorkerReplicas int32 `json:"desiredWorkerReplicas,omitempty"`
	// MinWorkerReplicas is the sum over unsuspended groups of minReplicas × numOfHosts.
	// +optional
	MinWorkerReplicas int32 `json:"minWorkerReplicas,omitempty"`
	// MaxWorkerReplicas is the sum over unsuspended groups of maxReplicas × numOfHosts.
	// +optional
	MaxWorkerReplicas int32 `json:"maxWorkerReplicas,omitempty"`

	// ObservedGeneration is the spec generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// HeadInfo locates the head Pod and Service.
type HeadInfo struct {
	// +optional
	PodIP string `json:"podIP,omitempty"`
	// +optional
	ServiceIP string `json:"serviceIP,omitempty"`
	// +optional
	PodName string `json:"podName,omitempty"`
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
}

// RayClusterConditionType is the type of a RayCluster status condition.
type RayClusterConditionType string

const (
	// RayClusterProvisioned turns true the first time every desired Pod is
	// ready and then never flips back, so "has this cluster ever come up"
	// stays answerable after Pods churn.
	RayClusterProvisioned RayClusterConditionType = "RayClusterProvisioned"
	// HeadPodReady mirrors the head Pod's Ready condition.
	HeadPodReady RayClusterConditionType = "HeadPodReady"
	// RayClusterReplicaFailure is present (true) only while creating or
	// deleting Pods fails; it is removed, not set false, on success. The wire
	// value is KubeRay's "ReplicaFailure".
	RayClusterReplicaFailure RayClusterConditionType = "ReplicaFailure"
	// RayClusterSuspending is true from spec.suspend=true until every Pod is
	// deleted, so a suspend half done is resumed rather than forgotten.
	RayClusterSuspending RayClusterConditionType = "RayClusterSuspending"
	// RayClusterSuspended is true once a suspend has completed. It is never
	// true together with RayClusterSuspending.
	RayClusterSuspended RayClusterConditionType = "RayClusterSuspended"
)

// Condition reasons. They are untyped strings because metav1.Condition.Reason
// is a plain string.
const (
	// AllPodRunningAndReadyFirstTime is the RayClusterProvisioned=True reason.
	AllPodRunningAndReadyFirstTime = "AllPodRunningAndReadyFirstTime"
	// RayClusterPodsProvisioning is the RayClusterProvisioned=False reason.
	RayClusterPodsProvisioning = "RayClusterPodsProvisioning"
	// HeadPodNotFound is the HeadPodReady=False reason when no head Pod exists.
	HeadPodNotFound = "HeadPodNotFound"
	// HeadPodRunningAndReady is the HeadPodReady=True reason when the Pod's
	// own Ready condition carries none.
	HeadPodRunningAndReady = "HeadPodRunningAndReady"
	// UnknownReason is used when no better reason is known.
	UnknownReason = "Unknown"

	// Reasons of RayClusterReplicaFailure, one per failing Pod operation.
	FailedDeleteAllPods   = "FailedDeleteAllPods"
	FailedDeleteHeadPod   = "FailedDeleteHeadPod"
	FailedCreateHeadPod   = "FailedCreateHeadPod"
	FailedDeleteWorkerPod = "FailedDeleteWorkerPod"
	FailedCreateWorkerPod = "FailedCreateWorkerPod"
)

// The reasons of RayClusterSuspending and RayClusterSuspended equal their
// condition types, as in KubeRay.
const (
	RayClusterSuspendingReason = string(RayClusterSuspending)
	RayClusterSuspendedReason  = string(RayClusterSuspended)
)

// RayNodeType is the role of a Ray Pod; it is the value of the
// ray.io/node-type label.
type RayNodeType string

const (
	HeadNode   RayNodeType = "head"
	WorkerNode RayNodeType = "worker"
	// RedisCleanupNode labels the Pod of the Job that deletes a GCS
	// fault-tolerant cluster's keys from Redis after the cluster is deleted.
	RedisCleanupNode RayNodeType = "redis-cleanup"
)
