package raycluster

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

// conditionSummary renders conditions as type -> "status/reason".
func conditionSummary(conds []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, c := range conds {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

const (
	condProvisioned = string(rayv1.RayClusterProvisioned)
	condHeadReady   = string(rayv1.HeadPodReady)
	condSuspending  = string(rayv1.RayClusterSuspending)
	condSuspended   = string(rayv1.RayClusterSuspended)
	condFailure     = string(rayv1.RayClusterReplicaFailure)
)

// TestConditionLifecycle drives one cluster through creation, a head Pod
// restart, suspend and resume, feeding each computed status back in as the
// reconciler does after a write.
func TestConditionLifecycle(t *testing.T) {
	notReadyHead := func() []corev1.Pod {
		pods := readyClusterPods(2)
		pods[0] = statusPod("rc-head", rayv1.HeadNode, podRunningNotReady)
		return pods
	}
	steps := []struct {
		name          string
		suspend       *bool
		pods          []corev1.Pod
		want          map[string]string
		wantState     rayv1.ClusterState
		wantProvMsg   string
		wantNewWrite  bool
		wantHeadMsg   string
		wantTransTime map[string]bool // conditions whose lastTransitionTime must be this step's
	}{
		{
			name: "created, no Pods yet",
			want: map[string]string{
				condHeadReady:   "False/" + rayv1.HeadPodNotFound,
				condProvisioned: "False/" + rayv1.RayClusterPodsProvisioning,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantNewWrite: true,
		},
		{
			name: "Pods pending",
			pods: []corev1.Pod{statusPod("rc-head", rayv1.HeadNode, podPending), statusPod("w0", rayv1.WorkerNode, podPending)},
			want: map[string]string{
				condHeadReady:   "False/" + rayv1.UnknownReason,
				condProvisioned: "False/" + rayv1.RayClusterPodsProvisioning,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantNewWrite: true,
		},
		{
			name: "all Pods ready for the first time",
			pods: readyClusterPods(2),
			want: map[string]string{
				condHeadReady:   "True/" + rayv1.HeadPodRunningAndReady,
				condProvisioned: "True/" + rayv1.AllPodRunningAndReadyFirstTime,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:     rayv1.Ready,
			wantNewWrite:  true,
			wantTransTime: map[string]bool{condHeadReady: true, condProvisioned: true},
		},
		{
			name: "nothing changed",
			pods: readyClusterPods(2),
			want: map[string]string{
				condHeadReady:   "True/" + rayv1.HeadPodRunningAndReady,
				condProvisioned: "True/" + rayv1.AllPodRunningAndReadyFirstTime,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState: rayv1.Ready,
		},
		{
			name: "head Pod restarting: Provisioned stays latched",
			pods: notReadyHead(),
			want: map[string]string{
				condHeadReady:   "False/ContainersNotReady",
				condProvisioned: "True/" + rayv1.AllPodRunningAndReadyFirstTime,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:     rayv1.Ready,
			wantHeadMsg:   "containers with unready status: [ray]",
			wantNewWrite:  true,
			wantTransTime: map[string]bool{condHeadReady: true},
		},
		{
			name: "head Pod deleted: Provisioned still latched",
			pods: readyClusterPods(2)[1:],
			want: map[string]string{
				condHeadReady:   "False/" + rayv1.HeadPodNotFound,
				condProvisioned: "True/" + rayv1.AllPodRunningAndReadyFirstTime,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:    rayv1.Ready,
			wantNewWrite: true,
		},
		{
			name:    "suspend requested, Pods still there",
			suspend: ptr.To(true),
			pods:    readyClusterPods(2),
			want: map[string]string{
				condHeadReady:   "True/" + rayv1.HeadPodRunningAndReady,
				condProvisioned: "True/" + rayv1.AllPodRunningAndReadyFirstTime,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "True/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:     rayv1.Ready,
			wantNewWrite:  true,
			wantTransTime: map[string]bool{condHeadReady: true, condSuspending: true},
		},
		{
			name:    "suspend flipped back while Pods remain: stays Suspending",
			suspend: ptr.To(false),
			pods:    readyClusterPods(1),
			want: map[string]string{
				condHeadReady:   "True/" + rayv1.HeadPodRunningAndReady,
				condProvisioned: "True/" + rayv1.AllPodRunningAndReadyFirstTime,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "True/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:    rayv1.Ready,
			wantNewWrite: true,
		},
		{
			name:    "every Pod gone: Suspended, Provisioned reset",
			suspend: ptr.To(true),
			want: map[string]string{
				condHeadReady:   "False/" + rayv1.HeadPodNotFound,
				condProvisioned: "False/" + rayv1.RayClusterPodsProvisioning,
				condSuspended:   "True/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:     rayv1.Suspended,
			wantProvMsg:   "RayCluster has been suspended",
			wantNewWrite:  true,
			wantTransTime: map[string]bool{condHeadReady: true, condProvisioned: true, condSuspended: true, condSuspending: true},
		},
		{
			name:    "still suspended",
			suspend: ptr.To(true),
			want: map[string]string{
				condHeadReady:   "False/" + rayv1.HeadPodNotFound,
				condProvisioned: "False/" + rayv1.RayClusterPodsProvisioning,
				condSuspended:   "True/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:   rayv1.Suspended,
			wantProvMsg: "RayCluster has been suspended",
		},
		{
			name:    "resumed",
			suspend: ptr.To(false),
			want: map[string]string{
				condHeadReady:   "False/" + rayv1.HeadPodNotFound,
				condProvisioned: "False/" + rayv1.RayClusterPodsProvisioning,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:    rayv1.Suspended,
			wantProvMsg:  "RayCluster has been suspended",
			wantNewWrite: true,
		},
		{
			name:    "Pods back and ready: provisioned again",
			suspend: ptr.To(false),
			pods:    readyClusterPods(2),
			want: map[string]string{
				condHeadReady:   "True/" + rayv1.HeadPodRunningAndReady,
				condProvisioned: "True/" + rayv1.AllPodRunningAndReadyFirstTime,
				condSuspended:   "False/" + rayv1.RayClusterSuspendedReason,
				condSuspending:  "False/" + rayv1.RayClusterSuspendingReason,
			},
			wantState:    rayv1.Ready,
			wantNewWrite: true,
		},
	}

	cluster := statusFixture()
	svc := headServiceFixture()
	for i, step := range steps {
		now := statusTestNow.Add(time.Duration(i) * time.Minute)
		if step.suspend != nil {
			cluster.Spec.Suspend = step.suspend
		}
		s := mustCalculate(t, cluster, step.pods, svc, StatusOptions{ConditionsEnabled: true, Now: now})
		label := fmt.Sprintf("step %d (%s)", i, step.name)

		if got := conditionSummary(s.Conditions); !maps.Equal(got, step.want) {
			t.Fatalf("%s: conditions\n got %v\nwant %v", label, got, step.want)
		}
		if s.State != step.wantState {
			t.Errorf("%s: state = %q, want %q", label, s.State, step.wantState)
		}
		if step.wantProvMsg != "" {
			if c := meta.FindStatusCondition(s.Conditions, condProvisioned); c.Message != step.wantProvMsg {
				t.Errorf("%s: Provisioned message = %q, want %q", label, c.Message, step.wantProvMsg)
			}
		}
		if step.wantHeadMsg != "" {
			if c := meta.FindStatusCondition(s.Conditions, condHeadReady); c.Message != step.wantHeadMsg {
				t.Errorf("%s: HeadPodReady message = %q, want %q", label, c.Message, step.wantHeadMsg)
			}
		}
		for condType := range step.wantTransTime {
			if c := meta.FindStatusCondition(s.Conditions, condType); !c.LastTransitionTime.Time.Equal(now) {
				t.Errorf("%s: %s lastTransitionTime = %v, want this step's %v", label, condType, c.LastTransitionTime, now)
			}
		}
		if err := validation.ValidateRayClusterStatus(s); err != nil {
			t.Errorf("%s: the computed status is invalid: %v", label, err)
		}
		if got := InconsistentRayClusterStatus(cluster.Status, *s); got != step.wantNewWrite {
			t.Errorf("%s: InconsistentRayClusterStatus = %v, want %v", label, got, step.wantNewWrite)
		}
		cluster.Status = *s
	}
}

func TestReplicaFailureCondition(t *testing.T) {
	createFailed := NewReplicaFailureError(rayv1.FailedCreateWorkerPod, errors.New("quota exceeded"))
	existing := metav1.Condition{
		Type: condFailure, Status: metav1.ConditionTrue, Reason: rayv1.FailedDeleteHeadPod, Message: "old",
		LastTransitionTime: metav1.NewTime(statusTestNow.Add(-time.Hour)),
	}
	tests := []struct {
		name        string
		existing    []metav1.Condition
		err         error
		wantPresent bool
		wantReason  string
		wantMessage string
	}{
		{name: "pod creation failed", err: createFailed, wantPresent: true, wantReason: rayv1.FailedCreateWorkerPod, wantMessage: "quota exceeded"},
		{
			name: "wrapped by the step runner", err: fmt.Errorf("step Pods: %w", createFailed),
			wantPresent: true, wantReason: rayv1.FailedCreateWorkerPod, wantMessage: "quota exceeded",
		},
		{
			// A Service failure in the same reconcile is not about replicas.
			name: "joined with another step's error", err: errors.Join(createFailed, errors.New("step HeadService: refused")),
			wantPresent: true, wantReason: rayv1.FailedCreateWorkerPod, wantMessage: "quota exceeded",
		},
		{name: "an error that is not about replicas sets nothing", err: errors.New("service conflict")},
		{
			name: "an error that is not about replicas keeps an earlier failure", existing: []metav1.Condition{existing},
			err: errors.New("service conflict"), wantPresent: true, wantReason: rayv1.FailedDeleteHeadPod, wantMessage: "old",
		},
		{name: "success removes the condition", existing: []metav1.Condition{existing}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := statusFixture()
			cluster.Status.Conditions = tc.existing
			s := mustCalculate(t, cluster, nil, nil, StatusOptions{ConditionsEnabled: true, Now: statusTestNow, ReconcileErr: tc.err})
			c := meta.FindStatusCondition(s.Conditions, condFailure)
			if (c != nil) != tc.wantPresent {
				t.Fatalf("ReplicaFailure present = %v, want %v", c != nil, tc.wantPresent)
			}
			if c == nil {
				return
			}
			if c.Status != metav1.ConditionTrue || c.Reason != tc.wantReason || c.Message != tc.wantMessage {
				t.Errorf("ReplicaFailure = %s/%s/%q, want True/%s/%q", c.Status, c.Reason, c.Message, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

func TestConditionsGateOff(t *testing.T) {
	kept := []metav1.Condition{{Type: condProvisioned, Status: metav1.ConditionFalse, Reason: "x"}}
	cluster := statusFixture()
	cluster.Status.Conditions = kept
	failure := NewReplicaFailureError(rayv1.FailedCreateHeadPod, errors.New("boom"))
	s := mustCalculate(t, cluster, readyClusterPods(2), nil, StatusOptions{Now: statusTestNow, ReconcileErr: failure})
	if got := conditionSummary(s.Conditions); !maps.Equal(got, map[string]string{condProvisioned: "False/x"}) {
		t.Errorf("with the gate off conditions changed to %v", got)
	}

	cluster.Status.Conditions = nil
	cluster.Spec.Suspend = ptr.To(true)
	s = mustCalculate(t, cluster, nil, nil, StatusOptions{Now: statusTestNow})
	if len(s.Conditions) != 0 || s.State != rayv1.Suspended {
		t.Errorf("with the gate off: conditions %v, state %q; want none and suspended", s.Conditions, s.State)
	}
}

func TestHeadPodReadyCondition(t *testing.T) {
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
		Message: "containers with unready status: [ray-head]"}}
	tests := []struct {
		name        string
		podConds    []corev1.PodCondition
		containers  []corev1.ContainerStatus
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "no Ready condition yet", wantStatus: metav1.ConditionFalse, wantReason: rayv1.UnknownReason},
		// KubeRay v1.6's refinement (utils.FindHeadPodReadyCondition): the
		// first container that waits or has terminated says why.
		{
			name:     "ContainersNotReady refined by a waiting container",
			podConds: notReady,
			containers: []corev1.ContainerStatus{
				{Name: "sidecar", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "ray-head", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}}},
			},
			wantStatus: metav1.ConditionFalse, wantReason: "CrashLoopBackOff",
			wantMessage: "containers with unready status: [ray-head]; ray-head: back-off 40s restarting failed container",
		},
		{
			name:     "ContainersNotReady refined by a terminated container",
			podConds: notReady,
			containers: []corev1.ContainerStatus{
				{Name: "ray-head", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}},
			},
			wantStatus: metav1.ConditionFalse, wantReason: "OOMKilled",
			wantMessage: "containers with unready status: [ray-head]; ray-head: ",
		},
		{
			// Better than upstream: an empty container reason would make an
			// invalid condition, which the API server refuses.
			name:     "a waiting container without a reason keeps ContainersNotReady",
			podConds: notReady,
			containers: []corev1.ContainerStatus{
				{Name: "ray-head", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}},
			},
			wantStatus: metav1.ConditionFalse, wantReason: "ContainersNotReady",
			wantMessage: "containers with unready status: [ray-head]",
		},
		{
			name:       "ready without a reason",
			podConds:   []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			wantStatus: metav1.ConditionTrue, wantReason: rayv1.HeadPodRunningAndReady,
		},
		{
			name:       "the kubelet's reason is kept",
			podConds:   []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted"}},
			wantStatus: metav1.ConditionFalse, wantReason: "PodCompleted",
		},
		{
			name:       "not ready without a reason",
			podConds:   []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			wantStatus: metav1.ConditionFalse, wantReason: rayv1.UnknownReason,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: tc.podConds, ContainerStatuses: tc.containers}}
			c := headPodReadyCondition(pod)
			if c.Type != condHeadReady || c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Errorf("got %s %s/%s, want %s/%s", c.Type, c.Status, c.Reason, tc.wantStatus, tc.wantReason)
			}
			if tc.wantMessage != "" && c.Message != tc.wantMessage {
				t.Errorf("message %q, want %q", c.Message, tc.wantMessage)
			}
		})
	}
}

func TestStatusFeatureGates(t *testing.T) {
	spec, ok := features.FeatureGates()[features.RayClusterStatusConditions]
	if !ok || !spec.Default {
		t.Errorf("RayClusterStatusConditions must be registered and on by default, got %+v", spec)
	}
}

// A refused create names a generated Pod that differs on every retry; the
// condition's message leaves it out, so retries do not rewrite status.
func TestReplicaFailureMessageOmitsGeneratedPodName(t *testing.T) {
	refused := func(name string) error {
		return NewReplicaFailureError(rayv1.FailedCreateHeadPod,
			apierrors.NewForbidden(corev1.Resource("pods"), name, errors.New("exceeded quota: no-pods")))
	}
	a, b := replicaFailureMessage(refused("rc-head-abcde")), replicaFailureMessage(refused("rc-head-fghij"))
	if a != b {
		t.Errorf("messages differ by the Pod name: %q vs %q", a, b)
	}
	if want := "pods is forbidden: exceeded quota: no-pods"; a != want {
		t.Errorf("message = %q, want %q", a, want)
	}
	if got := replicaFailureMessage(errors.New("plain")); got != "plain" {
		t.Errorf("plain error message = %q", got)
	}
}
