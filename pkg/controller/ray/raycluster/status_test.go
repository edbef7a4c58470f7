package raycluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

var statusTestNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// statusFixture is a cluster with one head and a "cpu" group of two workers.
func statusFixture() *rayv1.RayCluster {
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "ns", Generation: 3},
		Spec: rayv1.RayClusterSpec{
			HeadGroupSpec: rayv1.HeadGroupSpec{Template: statusPodTemplate(nil, nil)},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{
				statusWorkerGroup("cpu", 2, 1, nil, nil),
			},
		},
	}
}

func statusPodTemplate(requests, limits corev1.ResourceList) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:      "ray",
		Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
	}}}}
}

func statusWorkerGroup(name string, replicas, hosts int32, requests, limits corev1.ResourceList) rayv1.WorkerGroupSpec {
	return rayv1.WorkerGroupSpec{
		GroupName:   name,
		Replicas:    ptr.To(replicas),
		MinReplicas: ptr.To[int32](0),
		MaxReplicas: ptr.To[int32](10),
		NumOfHosts:  hosts,
		Template:    statusPodTemplate(requests, limits),
	}
}

type podState int

const (
	podPending podState = iota
	podRunningNotReady
	podRunningReady
)

func statusPod(name string, nodeType rayv1.RayNodeType, state podState) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{rayv1.RayClusterLabelKey: "rc", rayv1.RayNodeTypeLabelKey: string(nodeType)},
	}}
	switch state {
	case podPending:
		pod.Status.Phase = corev1.PodPending
	case podRunningNotReady:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [ray]",
		}}
	case podRunningReady:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if nodeType == rayv1.HeadNode {
		pod.Status.PodIP = "10.0.0.1"
	}
	return pod
}

// readyClusterPods is a head and n workers, all running and ready.
func readyClusterPods(workers int) []corev1.Pod {
	pods := []corev1.Pod{statusPod("rc-head", rayv1.HeadNode, podRunningReady)}
	for i := range workers {
		pods = append(pods, statusPod(fmt.Sprintf("rc-worker-%d", i), rayv1.WorkerNode, podRunningReady))
	}
	return pods
}

func headServiceFixture() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "ns"},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{
				{Name: "gcs-server", Port: 6379, TargetPort: intstr.FromInt32(6379)},
				{Name: "dashboard", Port: 8265, TargetPort: intstr.FromInt32(8265), NodePort: 30265},
				{Name: "client", Port: 10001, TargetPort: intstr.FromString("client")},
				{Port: 9999, TargetPort: intstr.FromInt32(9999)},
			},
		},
	}
}

func mustCalculate(t *testing.T, cluster *rayv1.RayCluster, pods []corev1.Pod, svc *corev1.Service, opts StatusOptions) *rayv1.RayClusterStatus {
	t.Helper()
	status, err := CalculateStatus(cluster, pods, svc, opts)
	if err != nil {
		t.Fatalf("CalculateStatus: %v", err)
	}
	return status
}

func TestCalculateStatusReplicaCounts(t *testing.T) {
	tests := []struct {
		name                                      string
		groups                                    []rayv1.WorkerGroupSpec
		pods                                      []corev1.Pod
		ready, available, desired, minimum, maxim int32
	}{
		{
			name:   "ready, running-not-ready and pending workers",
			groups: []rayv1.WorkerGroupSpec{statusWorkerGroup("cpu", 3, 1, nil, nil)},
			pods: []corev1.Pod{
				statusPod("h", rayv1.HeadNode, podRunningReady),
				statusPod("w0", rayv1.WorkerNode, podRunningReady),
				statusPod("w1", rayv1.WorkerNode, podRunningNotReady),
				statusPod("w2", rayv1.WorkerNode, podPending),
			},
			ready: 1, available: 2, desired: 3, minimum: 0, maxim: 10,
		},
		{
			name: "multi-host groups count Pods, not replicas",
			groups: []rayv1.WorkerGroupSpec{
				statusWorkerGroup("tpu", 2, 4, nil, nil),
				statusWorkerGroup("cpu", 1, 1, nil, nil),
			},
			pods:  readyClusterPods(9),
			ready: 9, available: 9, desired: 9, minimum: 0, maxim: 50,
		},
		{
			name: "replicas are clamped to the bounds",
			groups: func() []rayv1.WorkerGroupSpec {
				below := statusWorkerGroup("below", 1, 1, nil, nil)
				below.MinReplicas = ptr.To[int32](3)
				above := statusWorkerGroup("above", 20, 2, nil, nil)
				unset := statusWorkerGroup("unset", 0, 1, nil, nil)
				unset.Replicas = nil
				unset.MinReplicas = ptr.To[int32](2)
				return []rayv1.WorkerGroupSpec{below, above, unset}
			}(),
			desired: 3 + 20 + 2, minimum: 3 + 0 + 2, maxim: 10 + 20 + 10,
		},
		{
			name: "a suspended group contributes nothing",
			groups: func() []rayv1.WorkerGroupSpec {
				off := statusWorkerGroup("off", 4, 2, nil, nil)
				off.Suspend = ptr.To(true)
				off.MinReplicas = ptr.To[int32](1)
				return []rayv1.WorkerGroupSpec{off, statusWorkerGroup("on", 1, 1, nil, nil)}
			}(),
			desired: 1, minimum: 0, maxim: 10,
		},
		{
			name:   "head Pods are not workers",
			groups: []rayv1.WorkerGroupSpec{statusWorkerGroup("cpu", 0, 1, nil, nil)},
			pods:   []corev1.Pod{statusPod("h", rayv1.HeadNode, podRunningReady)},
			maxim:  10,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := statusFixture()
			cluster.Spec.WorkerGroupSpecs = tc.groups
			s := mustCalculate(t, cluster, tc.pods, nil, StatusOptions{Now: statusTestNow})
			got := [5]int32{s.ReadyWorkerReplicas, s.AvailableWorkerReplicas, s.DesiredWorkerReplicas, s.MinWorkerReplicas, s.MaxWorkerReplicas}
			want := [5]int32{tc.ready, tc.available, tc.desired, tc.minimum, tc.maxim}
			if got != want {
				t.Errorf("ready/available/desired/min/max = %v, want %v", got, want)
			}
		})
	}
}

func TestCalculateStatusResources(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name                  string
		head                  corev1.PodTemplateSpec
		groups                []rayv1.WorkerGroupSpec
		cpu, memory, gpu, tpu string
	}{
		{
			name: "head only",
			head: statusPodTemplate(corev1.ResourceList{"cpu": q("1"), "memory": q("2Gi")}, nil),
			cpu:  "1", memory: "2Gi", gpu: "0", tpu: "0",
		},
		{
			name: "requests win over limits, limits alone count",
			head: statusPodTemplate(corev1.ResourceList{"cpu": q("500m")}, corev1.ResourceList{"cpu": q("2"), "memory": q("1Gi")}),
			cpu:  "500m", memory: "1Gi", gpu: "0", tpu: "0",
		},
		{
			name: "GPU from limits, multiplied by replicas and hosts",
			head: statusPodTemplate(corev1.ResourceList{"cpu": q("1")}, nil),
			groups: []rayv1.WorkerGroupSpec{
				statusWorkerGroup("gpu", 3, 2, corev1.ResourceList{"cpu": q("2")}, corev1.ResourceList{"nvidia.com/gpu": q("1")}),
			},
			cpu: "13", memory: "0", gpu: "6", tpu: "0",
		},
		{
			name: "every GPU-like resource adds to desiredGPU",
			head: statusPodTemplate(nil, nil),
			groups: []rayv1.WorkerGroupSpec{
				statusWorkerGroup("nvidia", 1, 1, nil, corev1.ResourceList{"nvidia.com/gpu": q("2")}),
				statusWorkerGroup("amd", 1, 1, nil, corev1.ResourceList{"amd.com/gpu": q("1")}),
				statusWorkerGroup("mig", 2, 1, nil, corev1.ResourceList{"nvidia.com/mig-1g.5gb": q("1")}),
			},
			cpu: "0", memory: "0", gpu: "5", tpu: "0",
		},
		{
			name: "TPU of a multi-host slice",
			head: statusPodTemplate(nil, nil),
			groups: []rayv1.WorkerGroupSpec{
				statusWorkerGroup("tpu", 2, 4, nil, corev1.ResourceList{"google.com/tpu": q("4")}),
			},
			cpu: "0", memory: "0", gpu: "0", tpu: "32",
		},
		{
			name: "sidecar containers add up, suspended groups do not",
			head: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "ray", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}}},
				{Name: "autoscaler", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("500m"), "memory": q("512Mi")}}},
			}}},
			groups: func() []rayv1.WorkerGroupSpec {
				off := statusWorkerGroup("off", 5, 1, corev1.ResourceList{"cpu": q("8")}, nil)
				off.Suspend = ptr.To(true)
				return []rayv1.WorkerGroupSpec{off}
			}(),
			cpu: "1500m", memory: "512Mi", gpu: "0", tpu: "0",
		},
		{
			name: "a group above maxReplicas counts only maxReplicas",
			head: statusPodTemplate(nil, nil),
			groups: []rayv1.WorkerGroupSpec{
				statusWorkerGroup("cpu", 50, 1, corev1.ResourceList{"cpu": q("1")}, nil),
			},
			cpu: "10", memory: "0", gpu: "0", tpu: "0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := statusFixture()
			cluster.Spec.HeadGroupSpec.Template = tc.head
			cluster.Spec.WorkerGroupSpecs = tc.groups
			s := mustCalculate(t, cluster, nil, nil, StatusOptions{Now: statusTestNow})
			for _, c := range []struct {
				field string
				got   resource.Quantity
				want  string
			}{
				{"desiredCPU", s.DesiredCPU, tc.cpu},
				{"desiredMemory", s.DesiredMemory, tc.memory},
				{"desiredGPU", s.DesiredGPU, tc.gpu},
				{"desiredTPU", s.DesiredTPU, tc.tpu},
			} {
				if c.got.Cmp(q(c.want)) != 0 {
					t.Errorf("%s = %s, want %s", c.field, c.got.String(), c.want)
				}
			}
		})
	}
}

func TestCalculateStatusDoesNotMutateInputs(t *testing.T) {
	cluster := statusFixture()
	// A request map next to a limit-only resource: a careless sum writes the
	// limit into the request map.
	cluster.Spec.WorkerGroupSpecs[0].Template = statusPodTemplate(
		corev1.ResourceList{"cpu": resource.MustParse("1")},
		corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
	)
	cluster.Spec.Suspend = ptr.To(true)
	cluster.Status = rayv1.RayClusterStatus{
		State:     rayv1.Ready,
		Endpoints: map[string]string{"old": "1"},
		Conditions: []metav1.Condition{{
			Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionTrue, Reason: rayv1.AllPodRunningAndReadyFirstTime,
		}},
		StateTransitionTimes: map[rayv1.ClusterState]*metav1.Time{rayv1.Ready: {Time: statusTestNow.Add(-time.Hour)}},
	}
	pods := readyClusterPods(2)
	svc := headServiceFixture()
	clusterBefore, podsBefore, svcBefore := cluster.DeepCopy(), clonePods(pods), svc.DeepCopy()

	_ = mustCalculate(t, cluster, pods, svc, StatusOptions{ConditionsEnabled: true, Now: statusTestNow})

	if !equality.Semantic.DeepEqual(cluster, clusterBefore) {
		t.Error("CalculateStatus modified the cluster")
	}
	if !equality.Semantic.DeepEqual(pods, podsBefore) {
		t.Error("CalculateStatus modified the Pods")
	}
	if !equality.Semantic.DeepEqual(svc, svcBefore) {
		t.Error("CalculateStatus modified the head Service")
	}
}

func clonePods(pods []corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, len(pods))
	for i := range pods {
		pods[i].DeepCopyInto(&out[i])
	}
	return out
}

func TestCalculateStatusState(t *testing.T) {
	earlier := metav1.NewTime(statusTestNow.Add(-time.Hour))
	tests := []struct {
		name         string
		suspend      bool
		oldState     rayv1.ClusterState
		pods         []corev1.Pod
		reconcileErr error
		wantState    rayv1.ClusterState
	}{
		{name: "all Pods ready", pods: readyClusterPods(2), wantState: rayv1.Ready},
		{name: "a worker missing", pods: readyClusterPods(1), wantState: ""},
		{name: "an extra worker", pods: readyClusterPods(3), wantState: ""},
		{name: "a reconcile error holds Ready back", pods: readyClusterPods(2), reconcileErr: errors.New("service failed"), wantState: ""},
		{
			name: "a worker not ready",
			pods: append(readyClusterPods(1), statusPod("w", rayv1.WorkerNode, podRunningNotReady)),
		},
		{
			name: "Ready sticks when a Pod stops being ready", oldState: rayv1.Ready,
			pods:      append(readyClusterPods(1), statusPod("w", rayv1.WorkerNode, podRunningNotReady)),
			wantState: rayv1.Ready,
		},
		{name: "suspended once every Pod is gone", suspend: true, oldState: rayv1.Ready, wantState: rayv1.Suspended},
		{name: "not suspended while Pods remain", suspend: true, oldState: rayv1.Ready, pods: readyClusterPods(2), wantState: rayv1.Ready},
		{name: "resumed and ready again", oldState: rayv1.Suspended, pods: readyClusterPods(2), wantState: rayv1.Ready},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := statusFixture()
			cluster.Spec.Suspend = ptr.To(tc.suspend)
			cluster.Status.State = tc.oldState
			if tc.oldState != "" {
				cluster.Status.StateTransitionTimes = map[rayv1.ClusterState]*metav1.Time{tc.oldState: &earlier}
			}
			s := mustCalculate(t, cluster, tc.pods, nil, StatusOptions{Now: statusTestNow, ReconcileErr: tc.reconcileErr})
			if s.State != tc.wantState {
				t.Fatalf("state = %q, want %q", s.State, tc.wantState)
			}
			if !s.LastUpdateTime.Time.Equal(statusTestNow) {
				t.Errorf("lastUpdateTime = %v, want %v", s.LastUpdateTime, statusTestNow)
			}
			if tc.wantState == tc.oldState {
				if tc.oldState != "" && !s.StateTransitionTimes[tc.oldState].Equal(&earlier) {
					t.Errorf("transition time of an unchanged state moved: %v", s.StateTransitionTimes)
				}
				return
			}
			if got := s.StateTransitionTimes[tc.wantState]; got == nil || !got.Time.Equal(statusTestNow) {
				t.Errorf("stateTransitionTimes[%q] = %v, want %v", tc.wantState, got, statusTestNow)
			}
			if tc.oldState != "" && !s.StateTransitionTimes[tc.oldState].Equal(&earlier) {
				t.Errorf("the previous state's transition time was lost: %v", s.StateTransitionTimes)
			}
		})
	}
}

func TestCalculateStatusEndpointsAndHead(t *testing.T) {
	headless := headServiceFixture()
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	tests := []struct {
		name          string
		oldEndpoints  map[string]string
		pods          []corev1.Pod
		svc           *corev1.Service
		wantEndpoints map[string]string
		wantHead      rayv1.HeadInfo
	}{
		{
			name:          "node port over target port, named ports only",
			oldEndpoints:  map[string]string{"removed": "1"},
			pods:          readyClusterPods(0),
			svc:           headServiceFixture(),
			wantEndpoints: map[string]string{"gcs-server": "6379", "dashboard": "30265", "client": "client"},
			wantHead:      rayv1.HeadInfo{PodIP: "10.0.0.1", PodName: "rc-head", ServiceIP: "10.96.0.10", ServiceName: "rc-head-svc"},
		},
		{
			name:          "a headless Service reports the head Pod's IP",
			pods:          readyClusterPods(0),
			svc:           headless,
			wantEndpoints: map[string]string{"gcs-server": "6379", "dashboard": "30265", "client": "client"},
			wantHead:      rayv1.HeadInfo{PodIP: "10.0.0.1", PodName: "rc-head", ServiceIP: "10.0.0.1", ServiceName: "rc-head-svc"},
		},
		{
			name:          "no Service yet keeps the last endpoints",
			oldEndpoints:  map[string]string{"dashboard": "8265"},
			pods:          readyClusterPods(0),
			wantEndpoints: map[string]string{"dashboard": "8265"},
			wantHead:      rayv1.HeadInfo{PodIP: "10.0.0.1", PodName: "rc-head"},
		},
		{
			name:     "no head Pod",
			svc:      headServiceFixture(),
			wantHead: rayv1.HeadInfo{ServiceIP: "10.96.0.10", ServiceName: "rc-head-svc"},
			wantEndpoints: map[string]string{
				"gcs-server": "6379", "dashboard": "30265", "client": "client",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := statusFixture()
			cluster.Status.Endpoints = tc.oldEndpoints
			cluster.Status.Head = rayv1.HeadInfo{PodIP: "stale", PodName: "stale", ServiceIP: "stale", ServiceName: "stale"}
			s := mustCalculate(t, cluster, tc.pods, tc.svc, StatusOptions{Now: statusTestNow})
			if !equality.Semantic.DeepEqual(s.Endpoints, tc.wantEndpoints) {
				t.Errorf("endpoints = %v, want %v", s.Endpoints, tc.wantEndpoints)
			}
			if s.Head != tc.wantHead {
				t.Errorf("head = %+v, want %+v", s.Head, tc.wantHead)
			}
		})
	}
}

func TestCalculateStatusRejectsTwoHeadPods(t *testing.T) {
	pods := append(readyClusterPods(2), statusPod("rc-head-2", rayv1.HeadNode, podRunningReady))
	if _, err := CalculateStatus(statusFixture(), pods, nil, StatusOptions{Now: statusTestNow}); err == nil {
		t.Fatal("want an error for two head Pods")
	}
}

func TestCalculateStatusObservedGeneration(t *testing.T) {
	s := mustCalculate(t, statusFixture(), nil, nil, StatusOptions{Now: statusTestNow})
	if s.ObservedGeneration != 3 {
		t.Errorf("observedGeneration = %d, want 3", s.ObservedGeneration)
	}
}

func TestRepeatedCalculationNeedsNoWrite(t *testing.T) {
	cluster := statusFixture()
	pods := readyClusterPods(2)
	svc := headServiceFixture()
	first := mustCalculate(t, cluster, pods, svc, StatusOptions{ConditionsEnabled: true, Now: statusTestNow})
	cluster.Status = *first
	second := mustCalculate(t, cluster, pods, svc, StatusOptions{ConditionsEnabled: true, Now: statusTestNow.Add(time.Minute)})
	if InconsistentRayClusterStatus(*first, *second) {
		t.Errorf("a reconcile that observed nothing new asks for a write:\nold %+v\nnew %+v", first, second)
	}
	if !second.LastUpdateTime.Time.Equal(statusTestNow.Add(time.Minute)) {
		t.Error("lastUpdateTime is not refreshed on the computed status")
	}
	for _, c := range second.Conditions {
		if !c.LastTransitionTime.Time.Equal(statusTestNow) {
			t.Errorf("condition %s moved its lastTransitionTime without a change", c.Type)
		}
	}
}

func TestInconsistentRayClusterStatus(t *testing.T) {
	t0 := metav1.NewTime(statusTestNow)
	t1 := metav1.NewTime(statusTestNow.Add(time.Minute))
	provisioned := metav1.Condition{Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionTrue, Reason: "r", LastTransitionTime: t0}
	headReady := metav1.Condition{Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue, Reason: "r", LastTransitionTime: t0}
	base := func() rayv1.RayClusterStatus {
		return rayv1.RayClusterStatus{
			State:                 rayv1.Ready,
			DesiredCPU:            resource.MustParse("1"),
			ReadyWorkerReplicas:   2,
			DesiredWorkerReplicas: 2,
			MaxWorkerReplicas:     10,
			Endpoints:             map[string]string{"dashboard": "8265"},
			Head:                  rayv1.HeadInfo{PodIP: "10.0.0.1"},
			Conditions:            []metav1.Condition{provisioned, headReady},
			LastUpdateTime:        &t0,
			StateTransitionTimes:  map[rayv1.ClusterState]*metav1.Time{rayv1.Ready: &t0},
			ObservedGeneration:    1,
		}
	}
	tests := []struct {
		name   string
		change func(s *rayv1.RayClusterStatus)
		want   bool
	}{
		{name: "identical", change: func(*rayv1.RayClusterStatus) {}, want: false},
		{name: "lastUpdateTime only", change: func(s *rayv1.RayClusterStatus) { s.LastUpdateTime = &t1 }, want: false},
		{name: "stateTransitionTimes only", change: func(s *rayv1.RayClusterStatus) { s.StateTransitionTimes[rayv1.Ready] = &t1 }, want: false},
		{name: "a condition's lastTransitionTime only", change: func(s *rayv1.RayClusterStatus) { s.Conditions[0].LastTransitionTime = t1 }, want: false},
		{name: "condition order only", change: func(s *rayv1.RayClusterStatus) { s.Conditions[0], s.Conditions[1] = s.Conditions[1], s.Conditions[0] }, want: false},
		{name: "empty instead of nil endpoints", change: func(s *rayv1.RayClusterStatus) { s.Endpoints = map[string]string{} }, want: true},
		{name: "same CPU spelled differently", change: func(s *rayv1.RayClusterStatus) { s.DesiredCPU = resource.MustParse("1000m") }, want: false},
		{name: "state", change: func(s *rayv1.RayClusterStatus) { s.State = rayv1.Suspended }, want: true},
		{name: "reason", change: func(s *rayv1.RayClusterStatus) { s.Reason = "x" }, want: true},
		{name: "ready workers", change: func(s *rayv1.RayClusterStatus) { s.ReadyWorkerReplicas = 1 }, want: true},
		{name: "available workers", change: func(s *rayv1.RayClusterStatus) { s.AvailableWorkerReplicas = 1 }, want: true},
		{name: "desired workers", change: func(s *rayv1.RayClusterStatus) { s.DesiredWorkerReplicas = 3 }, want: true},
		{name: "min workers", change: func(s *rayv1.RayClusterStatus) { s.MinWorkerReplicas = 1 }, want: true},
		{name: "max workers", change: func(s *rayv1.RayClusterStatus) { s.MaxWorkerReplicas = 11 }, want: true},
		{name: "desired CPU", change: func(s *rayv1.RayClusterStatus) { s.DesiredCPU = resource.MustParse("2") }, want: true},
		{name: "desired memory", change: func(s *rayv1.RayClusterStatus) { s.DesiredMemory = resource.MustParse("1Gi") }, want: true},
		{name: "desired GPU", change: func(s *rayv1.RayClusterStatus) { s.DesiredGPU = resource.MustParse("1") }, want: true},
		{name: "desired TPU", change: func(s *rayv1.RayClusterStatus) { s.DesiredTPU = resource.MustParse("4") }, want: true},
		{name: "observed generation", change: func(s *rayv1.RayClusterStatus) { s.ObservedGeneration = 2 }, want: true},
		{name: "an endpoint", change: func(s *rayv1.RayClusterStatus) { s.Endpoints["client"] = "10001" }, want: true},
		{name: "head info", change: func(s *rayv1.RayClusterStatus) { s.Head.PodName = "rc-head" }, want: true},
		{name: "a condition's status", change: func(s *rayv1.RayClusterStatus) { s.Conditions[1].Status = metav1.ConditionFalse }, want: true},
		{name: "a condition's message", change: func(s *rayv1.RayClusterStatus) { s.Conditions[1].Message = "m" }, want: true},
		{name: "a condition added", change: func(s *rayv1.RayClusterStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: string(rayv1.RayClusterSuspending), Status: metav1.ConditionFalse})
		}, want: true},
		{name: "a condition replaced by another type", change: func(s *rayv1.RayClusterStatus) {
			s.Conditions[1] = metav1.Condition{Type: string(rayv1.RayClusterSuspended), Status: metav1.ConditionTrue, Reason: "r"}
		}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := base()
			updated := base()
			tc.change(&updated)
			if got := InconsistentRayClusterStatus(old, updated); got != tc.want {
				t.Errorf("InconsistentRayClusterStatus() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSuspendedWorkerGroupPodsStillCount(t *testing.T) {
	// While a suspended group's Pods are being deleted they are still
	// observed; the desired count already excludes them.
	cluster := statusFixture()
	cluster.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true)
	s := mustCalculate(t, cluster, readyClusterPods(2), nil, StatusOptions{Now: statusTestNow})
	if s.DesiredWorkerReplicas != 0 || s.AvailableWorkerReplicas != 2 {
		t.Errorf("desired/available = %d/%d, want 0/2", s.DesiredWorkerReplicas, s.AvailableWorkerReplicas)
	}
	if s.State == rayv1.Ready {
		t.Error("a cluster with Pods it does not want is not Ready")
	}
}
