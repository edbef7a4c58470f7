package raycluster

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// ReplicaFailureError marks a reconcile error that means Pods could not be
// created or deleted. Only such errors surface as the ReplicaFailure
// condition; other errors (a Service that failed, a conflict) do not say
// anything about replicas.
type ReplicaFailureError struct {
	// Reason is one of rayv1.FailedCreateHeadPod, FailedCreateWorkerPod,
	// FailedDeleteHeadPod, FailedDeleteWorkerPod, FailedDeleteAllPods.
	Reason string
	Err    error
}

func (e *ReplicaFailureError) Error() string { return e.Err.Error() }
func (e *ReplicaFailureError) Unwrap() error { return e.Err }

// NewReplicaFailureError wraps err with a ReplicaFailure reason.
func NewReplicaFailureError(reason string, err error) error {
	return &ReplicaFailureError{Reason: reason, Err: err}
}

// ReplicaFailureReason returns the reason carried anywhere in err's chain,
// or "" when err is not about replicas.
func ReplicaFailureReason(err error) string {
	var rf *ReplicaFailureError
	if errors.As(err, &rf) {
		return rf.Reason
	}
	return ""
}

// replicaFailureMessage is err's message without the name of the Pod the
// API server refused: a generated name differs on every retry, and a message
// that changes each time would cost a status write per retry.
func replicaFailureMessage(err error) string {
	// Only the Pod failure: a Service error joined to it is not about replicas.
	var rf *ReplicaFailureError
	if errors.As(err, &rf) {
		err = rf.Err
	}
	msg := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil && d.Name != "" {
			msg = strings.Replace(msg, " "+strconv.Quote(d.Name), "", 1)
		}
	}
	return msg
}

// suspendPhase is where the cluster is in the two-phase suspend: spec.suspend
// is first acknowledged (Suspending) and only declared done (Suspended) once
// every Pod is gone, so a suspend interrupted by an operator restart is
// finished rather than forgotten.
type suspendPhase int

const (
	notSuspended suspendPhase = iota
	suspending
	suspended
)

func currentSuspendPhase(conditions []metav1.Condition) suspendPhase {
	switch {
	case meta.IsStatusConditionTrue(conditions, string(rayv1.RayClusterSuspending)):
		return suspending
	case meta.IsStatusConditionTrue(conditions, string(rayv1.RayClusterSuspended)):
		return suspended
	default:
		return notSuspended
	}
}

// conditionInputs is what the conditions are derived from.
type conditionInputs struct {
	suspendRequested bool
	pods             []corev1.Pod
	headPod          *corev1.Pod
	reconcileErr     error
	now              metav1.Time
}

// updateConditions moves the five conditions one step, in KubeRay's order.
// Every condition gets now as its transition time; meta.SetStatusCondition
// keeps the old time when the status does not actually change, so a repeated
// reconcile leaves the conditions byte-for-byte equal.
func updateConditions(conditions *[]metav1.Condition, in conditionInputs) {
	set := func(c metav1.Condition) {
		c.LastTransitionTime = in.now
		meta.SetStatusCondition(conditions, c)
	}

	if in.reconcileErr == nil {
		meta.RemoveStatusCondition(conditions, string(rayv1.RayClusterReplicaFailure))
	} else if reason := ReplicaFailureReason(in.reconcileErr); reason != "" {
		set(metav1.Condition{
			Type:    string(rayv1.RayClusterReplicaFailure),
			Status:  metav1.ConditionTrue,
			Reason:  reason,
			Message: replicaFailureMessage(in.reconcileErr),
		})
	}

	set(headPodReadyCondition(in.headPod))

	phase := currentSuspendPhase(*conditions)
	// Provisioned latches: once true it is left alone, so a head Pod restart
	// or a scale-up does not make a long-running cluster look new. Only a
	// completed suspend resets it (below).
	if !meta.IsStatusConditionTrue(*conditions, string(rayv1.RayClusterProvisioned)) && phase != suspended {
		if allPodsRunningAndReady(in.pods) {
			set(metav1.Condition{
				Type:    string(rayv1.RayClusterProvisioned),
				Status:  metav1.ConditionTrue,
				Reason:  rayv1.AllPodRunningAndReadyFirstTime,
				Message: "All Ray Pods are ready for the first time",
			})
		} else {
			set(metav1.Condition{
				Type:    string(rayv1.RayClusterProvisioned),
				Status:  metav1.ConditionFalse,
				Reason:  rayv1.RayClusterPodsProvisioning,
				Message: "RayCluster Pods are being provisioned for first time",
			})
		}
	}

	suspendingCondition := func(status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: string(rayv1.RayClusterSuspending), Reason: rayv1.RayClusterSuspendingReason, Status: status}
	}
	suspendedCondition := func(status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: string(rayv1.RayClusterSuspended), Reason: rayv1.RayClusterSuspendedReason, Status: status}
	}
	switch phase {
	case suspending:
		// Stays Suspending, even if spec.suspend is flipped back, until the
		// Pods are gone: a half-deleted cluster is not a running one.
		if len(in.pods) == 0 {
			set(metav1.Condition{
				Type:    string(rayv1.RayClusterProvisioned),
				Status:  metav1.ConditionFalse,
				Reason:  rayv1.RayClusterPodsProvisioning,
				Message: "RayCluster has been suspended",
			})
			set(suspendingCondition(metav1.ConditionFalse))
			set(suspendedCondition(metav1.ConditionTrue))
		}
	case suspended:
		if !in.suspendRequested {
			set(suspendedCondition(metav1.ConditionFalse))
		}
	default:
		set(suspendedCondition(metav1.ConditionFalse))
		if in.suspendRequested {
			set(suspendingCondition(metav1.ConditionTrue))
		} else {
			set(suspendingCondition(metav1.ConditionFalse))
		}
	}
}

// headPodReadyCondition mirrors the head Pod's own Ready condition, so the
// kubelet's reason (e.g. ContainersNotReady) and message reach the cluster.
func headPodReadyCondition(headPod *corev1.Pod) metav1.Condition {
	if headPod == nil {
		return metav1.Condition{
			Type:    string(rayv1.HeadPodReady),
			Status:  metav1.ConditionFalse,
			Reason:  rayv1.HeadPodNotFound,
			Message: "Head Pod not found",
		}
	}
	c := metav1.Condition{
		Type:   string(rayv1.HeadPodReady),
		Status: metav1.ConditionFalse,
		Reason: rayv1.UnknownReason,
	}
	for _, podCond := range headPod.Status.Conditions {
		if podCond.Type != corev1.PodReady {
			continue
		}
		c.Status = metav1.ConditionStatus(podCond.Status)
		c.Message = podCond.Message
		switch {
		case podCond.Reason != "":
			c.Reason = podCond.Reason
		case podCond.Status == corev1.ConditionTrue:
			c.Reason = rayv1.HeadPodRunningAndReady
		}
		if c.Reason == containersNotReady {
			refineContainersNotReady(&c, headPod)
		}
		break
	}
	return c
}

// containersNotReady is the kubelet's Ready reason while a container is
// not ready.
const containersNotReady = "ContainersNotReady"

// maxConditionMessage is the API server's limit on a condition's message.
const maxConditionMessage = 32768

// conditionReason is the pattern the API server holds a condition's
// reason to.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// refineContainersNotReady says why, as KubeRay 1.6 does: the reason and
// message of the first container that is waiting (CrashLoopBackOff,
// ImagePullBackOff, ...) or has terminated (OOMKilled, Error, ...). Unlike
// KubeRay, an empty or malformed container reason leaves the condition as
// it is: the API server would refuse the status.
func refineContainersNotReady(c *metav1.Condition, pod *corev1.Pod) {
	for _, cs := range pod.Status.ContainerStatuses {
		var reason, message string
		switch {
		case cs.State.Waiting != nil:
			reason, message = cs.State.Waiting.Reason, cs.State.Waiting.Message
		case cs.State.Terminated != nil:
			reason, message = cs.State.Terminated.Reason, cs.State.Terminated.Message
		default:
			continue
		}
		if !conditionReason.MatchString(reason) {
			return
		}
		c.Reason = reason
		if c.Message != "" {
			c.Message += "; "
		}
		c.Message += cs.Name + ": " + message
		if len(c.Message) > maxConditionMessage {
			c.Message = c.Message[:maxConditionMessage]
		}
		return
	}
}
