package raycluster

import (
	"fmt"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
)

// tpuResourceName is the only accelerator status reports separately from GPUs.
const tpuResourceName corev1.ResourceName = "google.com/tpu"

// StatusOptions are the inputs of CalculateStatus besides the cluster and
// what was observed.
type StatusOptions struct {
	// ConditionsEnabled is the RayClusterStatusConditions feature gate.
	ConditionsEnabled bool
	// Now stamps lastUpdateTime, state transitions and condition
	// transitions; the zero value means time.Now().
	Now time.Time
	// ReconcileErr is the first error of this reconcile's steps. Any error
	// keeps the cluster from becoming Ready; a ReplicaFailureError also sets
	// the ReplicaFailure condition.
	ReconcileErr error
}

// CalculateStatus computes the cluster's new status from its Ray Pods (head
// and workers, as selected by ray.io/cluster) and its head Service (nil when
// it does not exist yet). It works on a deep copy: neither the cluster nor
// the Pods are modified. Whether the result is worth writing is
// InconsistentRayClusterStatus's decision.
func CalculateStatus(cluster *rayv1.RayCluster, pods []corev1.Pod, headService *corev1.Service, opts StatusOptions) (*rayv1.RayClusterStatus, error) {
	headPod, err := findHeadPod(pods)
	if err != nil {
		return nil, fmt.Errorf("RayCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	stamp := metav1.NewTime(now)

	status := cluster.Status.DeepCopy()
	spec := &cluster.Spec

	status.ObservedGeneration = cluster.Generation
	status.ReadyWorkerReplicas, status.AvailableWorkerReplicas = countWorkerPods(pods)
	status.DesiredWorkerReplicas = spec.DesiredWorkerPods()
	status.MinWorkerReplicas = spec.MinWorkerPods()
	status.MaxWorkerReplicas = spec.MaxWorkerPods()

	desired := podspec.DesiredResources(spec)
	status.DesiredCPU = desired[corev1.ResourceCPU]
	status.DesiredMemory = desired[corev1.ResourceMemory]
	status.DesiredGPU = sumGPUResources(desired)
	status.DesiredTPU = desired[tpuResourceName]

	// Failed is never written: an earlier Gantry wrote it for an invalid
	// spec. This spec is valid, so it goes.
	if status.State == rayv1.Failed {
		status.State, status.Reason = "", ""
	}

	// Ready is sticky: it is only ever replaced by Suspended. KubeRay
	// deprecated state for conditions but kept this meaning, and scripts
	// rely on it.
	if opts.ReconcileErr == nil && len(pods) == int(status.DesiredWorkerReplicas)+1 && allPodsRunningAndReady(pods) {
		status.State = rayv1.Ready
		status.Reason = ""
	}

	if opts.ConditionsEnabled {
		updateConditions(&status.Conditions, conditionInputs{
			suspendRequested: spec.IsSuspended(),
			pods:             pods,
			headPod:          headPod,
			reconcileErr:     opts.ReconcileErr,
			now:              stamp,
		})
	}

	if spec.IsSuspended() && len(pods) == 0 {
		status.State = rayv1.Suspended
	}

	if headService != nil {
		status.Endpoints = serviceEndpoints(headService)
	}
	status.Head = headInfo(headPod, headService)

	status.LastUpdateTime = &stamp
	if status.State != cluster.Status.State {
		if status.StateTransitionTimes == nil {
			status.StateTransitionTimes = map[rayv1.ClusterState]*metav1.Time{}
		}
		status.StateTransitionTimes[status.State] = &stamp
	}
	return status, nil
}

// InconsistentRayClusterStatus reports whether newStatus differs from
// oldStatus in a field worth an API write. lastUpdateTime,
// stateTransitionTimes and conditions' lastTransitionTime are ignored: they
// only change together with a field that is compared, or they record when
// the same thing was observed again. Unlike KubeRay, the desired resources
// and observedGeneration are compared too, so `kubectl get` columns and
// generation-watching tools are not left stale.
func InconsistentRayClusterStatus(oldStatus, newStatus rayv1.RayClusterStatus) bool {
	switch {
	case oldStatus.State != newStatus.State, oldStatus.Reason != newStatus.Reason:
		return true
	case oldStatus.ReadyWorkerReplicas != newStatus.ReadyWorkerReplicas,
		oldStatus.AvailableWorkerReplicas != newStatus.AvailableWorkerReplicas,
		oldStatus.DesiredWorkerReplicas != newStatus.DesiredWorkerReplicas,
		oldStatus.MinWorkerReplicas != newStatus.MinWorkerReplicas,
		oldStatus.MaxWorkerReplicas != newStatus.MaxWorkerReplicas:
		return true
	case oldStatus.DesiredCPU.Cmp(newStatus.DesiredCPU) != 0,
		oldStatus.DesiredMemory.Cmp(newStatus.DesiredMemory) != 0,
		oldStatus.DesiredGPU.Cmp(newStatus.DesiredGPU) != 0,
		oldStatus.DesiredTPU.Cmp(newStatus.DesiredTPU) != 0:
		return true
	case oldStatus.ObservedGeneration != newStatus.ObservedGeneration:
		return true
	// maps.Equal treats nil and empty alike, as the API server does after
	// a round trip through omitempty.
	case !maps.Equal(oldStatus.Endpoints, newStatus.Endpoints), oldStatus.Head != newStatus.Head:
		return true
	}
	return !conditionsEquivalent(oldStatus.Conditions, newStatus.Conditions)
}

// conditionsEquivalent compares conditions by type, ignoring order and
// lastTransitionTime.
func conditionsEquivalent(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	byType := make(map[string]metav1.Condition, len(a))
	for _, c := range a {
		byType[c.Type] = c
	}
	if len(byType) != len(a) {
		return false
	}
	for _, c := range b {
		old, ok := byType[c.Type]
		if !ok || old.Status != c.Status || old.Reason != c.Reason ||
			old.Message != c.Message || old.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

func isHeadPodForStatus(pod *corev1.Pod) bool {
	return pod.Labels[rayv1.RayNodeTypeLabelKey] == string(rayv1.HeadNode)
}

// findHeadPod returns the head Pod, nil when there is none, and an error
// when there are several: status would then describe an arbitrary one.
func findHeadPod(pods []corev1.Pod) (*corev1.Pod, error) {
	var head *corev1.Pod
	for i := range pods {
		if !isHeadPodForStatus(&pods[i]) {
			continue
		}
		if head != nil {
			return nil, fmt.Errorf("found more than one head Pod (%s, %s)", head.Name, pods[i].Name)
		}
		head = &pods[i]
	}
	return head, nil
}

// countWorkerPods counts worker Pods that are running and ready, and those
// that are running at all. Multi-host replicas count each host Pod.
func countWorkerPods(pods []corev1.Pod) (ready, available int32) {
	for i := range pods {
		pod := &pods[i]
		if pod.Labels[rayv1.RayNodeTypeLabelKey] != string(rayv1.WorkerNode) || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		available++
		if podcond.IsReady(pod) {
			ready++
		}
	}
	return ready, available
}

// allPodsRunningAndReady is KubeRay's "all Pods running" test: there is at
// least one Pod, every Pod is Running, and none reports Ready other than
// True. A Running Pod without a Ready condition passes, as upstream.
func allPodsRunningAndReady(pods []corev1.Pod) bool {
	if len(pods) == 0 {
		return false
	}
	for i := range pods {
		if pods[i].Status.Phase != corev1.PodRunning {
			return false
		}
		for _, c := range pods[i].Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				return false
			}
		}
	}
	return true
}

// sumGPUResources adds every GPU-like resource (vendor/gpu names and NVIDIA
// MIG slices) into one figure, as the gpus column shows.
func sumGPUResources(list corev1.ResourceList) resource.Quantity {
	var total resource.Quantity
	for name, q := range list {
		if podspec.IsGPUResource(string(name)) && !q.IsZero() {
			total.Add(q)
		}
	}
	return total
}

// serviceEndpoints maps the head Service's named ports to the port a client
// outside the Pod network would use: the node port when there is one,
// otherwise the target port. It is rebuilt each time, so removed ports
// disappear (KubeRay only ever adds).
func serviceEndpoints(svc *corev1.Service) map[string]string {
	endpoints := map[string]string{}
	for _, port := range svc.Spec.Ports {
		if port.Name == "" {
			continue
		}
		switch {
		case port.NodePort != 0:
			endpoints[port.Name] = strconv.Itoa(int(port.NodePort))
		case port.TargetPort.IntVal != 0:
			endpoints[port.Name] = strconv.Itoa(int(port.TargetPort.IntVal))
		case port.TargetPort.StrVal != "":
			endpoints[port.Name] = port.TargetPort.StrVal
		}
	}
	if len(endpoints) == 0 {
		return nil
	}
	return endpoints
}

// headInfo locates the head. A headless head Service has no cluster IP, so
// the head Pod's IP stands in for it, as in KubeRay.
func headInfo(headPod *corev1.Pod, headService *corev1.Service) rayv1.HeadInfo {
	var info rayv1.HeadInfo
	if headPod != nil {
		info.PodIP = headPod.Status.PodIP
		info.PodName = headPod.Name
	}
	if headService != nil {
		info.ServiceName = headService.Name
		info.ServiceIP = headService.Spec.ClusterIP
		if headService.Spec.ClusterIP == corev1.ClusterIPNone {
			info.ServiceIP = info.PodIP
		}
	}
	return info
}
