package v1beta1

import corev1 "k8s.io/api/core/v1"

// Key prefixes. Users and tools (kubectl annotate, autoscalers, dashboards)
// already rely on these exact strings, so they are part of the API.
const (
	SlinkyPrefix   = "slinky.slurm.net/"
	NodeSetPrefix  = "nodeset." + SlinkyPrefix
	TopologyPrefix = "topology." + SlinkyPrefix
	FeaturesPrefix = "features." + SlinkyPrefix
)

// NodeFeaturePrefix marks the Slurm node features the operator manages
// from AnnotationNodeFeaturesSpec ("k8s/GPU"): it adds, replaces and
// removes those and leaves every other feature (the NodeSet's own, the
// ones in extraConf, a node_features plugin's) as it is.
const NodeFeaturePrefix = "k8s/"

// Annotations on NodeSet pods.
const (
	// AnnotationPodCordon marks a pod whose Slurm node must be drained; set by
	// users to take a node out of service, and by the operator before it
	// deletes a pod.
	AnnotationPodCordon = NodeSetPrefix + "pod-cordon"

	// AnnotationPodDeletionCost is an int32: on scale-in, pods with a lower
	// cost are removed first (best effort; no annotation means 0).
	AnnotationPodDeletionCost = NodeSetPrefix + "pod-deletion-cost"

	// AnnotationPodDeadline is an RFC 3339 time by which the pod's Slurm node
	// is expected to finish its running jobs; earlier deadlines are removed
	// first on scale-in (best effort).
	AnnotationPodDeadline = NodeSetPrefix + "pod-deadline"
)

// Annotations on Kubernetes Nodes.
const (
	// AnnotationNodeCordonReason is the drain reason given to Slurm when the
	// Kubernetes node running a NodeSet pod is cordoned.
	AnnotationNodeCordonReason = NodeSetPrefix + "node-cordon-reason"

	// AnnotationNodeTopologySpec is the Slurm dynamic topology of the node's
	// pods, e.g. "topo-switch:s2,topo-block:b2".
	AnnotationNodeTopologySpec = TopologyPrefix + "spec"

	// AnnotationNodeFeaturesSpec is a comma-separated list of Slurm node
	// features (e.g. "nn-75bfcf47ca3e4f7dc,GPU") for the Slurm nodes of the
	// NodeSet pods on the Kubernetes Node, applied under NodeFeaturePrefix.
	AnnotationNodeFeaturesSpec = FeaturesPrefix + "spec"

	// AnnotationNodeHostnameOverride is, verbatim, the hostname (hence the
	// Slurm node name) of the pod a DaemonSet-mode NodeSet runs on the node,
	// instead of the node's name up to its first dot.
	AnnotationNodeHostnameOverride = NodeSetPrefix + "hostname-override"
)

// Taints on Kubernetes Nodes.
const (
	// TaintKeyWorkerNode is the key of the NoExecute taint an administrator
	// puts on nodes kept for slurmd; every NodeSet pod tolerates it.
	TaintKeyWorkerNode = NodeSetPrefix + "worker"
)

// Labels on NodeSet pods, set by the NodeSet controller.
const (
	// LabelNodeSetPodName is the pod's name.
	LabelNodeSetPodName = NodeSetPrefix + "pod-name"

	// LabelNodeSetPodIndex is the pod's (padded) ordinal.
	LabelNodeSetPodIndex = NodeSetPrefix + "pod-index"

	// LabelNodeSetPodHostname is the pod's hostname, which is its Slurm node name.
	LabelNodeSetPodHostname = NodeSetPrefix + "pod-hostname"

	// LabelNodeSetPodProtect marks pods covered by the workload disruption
	// PodDisruptionBudget (they run Slurm jobs).
	LabelNodeSetPodProtect = NodeSetPrefix + "pod-protect"

	// LabelNodeSetScalingMode is the NodeSet's scaling mode.
	LabelNodeSetScalingMode = NodeSetPrefix + "scaling-mode"

	// LabelNodeSetRevisionHash is the ControllerRevision hash a pod was
	// built from; the same key Kubernetes' revision history uses.
	LabelNodeSetRevisionHash = "controller.kubernetes.io/hash"
)

// Finalizers.
const (
	// FinalizerNodeSetReservation holds a NodeSet until the Slurm reservation
	// it created is removed.
	FinalizerNodeSetReservation = NodeSetPrefix + "reservation"
)

// Condition types. Pods carry one condition per Slurm node state so that
// `kubectl get pod -o yaml` shows what Slurm thinks of the node.
const (
	PodConditionSlurmStatePrefix = "SlurmNodeState"

	// Base states: exactly one is true at a time.
	PodConditionAllocated corev1.PodConditionType = PodConditionSlurmStatePrefix + "Allocated"
	PodConditionDown      corev1.PodConditionType = PodConditionSlurmStatePrefix + "Down"
	PodConditionError     corev1.PodConditionType = PodConditionSlurmStatePrefix + "Error"
	PodConditionFuture    corev1.PodConditionType = PodConditionSlurmStatePrefix + "Future"
	PodConditionIdle      corev1.PodConditionType = PodConditionSlurmStatePrefix + "Idle"
	PodConditionMixed     corev1.PodConditionType = PodConditionSlurmStatePrefix + "Mixed"
	PodConditionUnknown   corev1.PodConditionType = PodConditionSlurmStatePrefix + "Unknown"

	// Flag states: any combination may be true.
	PodConditionCompleting    corev1.PodConditionType = PodConditionSlurmStatePrefix + "Completing"
	PodConditionDrain         corev1.PodConditionType = PodConditionSlurmStatePrefix + "Drain"
	PodConditionFail          corev1.PodConditionType = PodConditionSlurmStatePrefix + "Fail"
	PodConditionInvalid       corev1.PodConditionType = PodConditionSlurmStatePrefix + "Invalid"
	PodConditionInvalidReg    corev1.PodConditionType = PodConditionSlurmStatePrefix + "InvalidReg"
	PodConditionMaintenance   corev1.PodConditionType = PodConditionSlurmStatePrefix + "Maintenance"
	PodConditionNotResponding corev1.PodConditionType = PodConditionSlurmStatePrefix + "NotResponding"
	PodConditionUndrain       corev1.PodConditionType = PodConditionSlurmStatePrefix + "Undrain"

	// NodeSetConditionReservationCreated is true once the NodeSet's Slurm
	// reservation exists.
	NodeSetConditionReservationCreated = "ReservationCreated"
)
