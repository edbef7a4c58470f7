package rayjob

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// submitterEnded: the SidecarMode submitter container will not run again,
// so a head Pod that was not Ready by then never will be.
func TestSubmitterEnded(t *testing.T) {
	exit := func(code int32) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code}
	}
	tests := []struct {
		name    string
		restart bool
		limit   *int32
		status  corev1.ContainerStatus
		want    bool
	}{
		{name: "running", status: corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		{name: "waiting", status: corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}},
		{name: "exit 0", status: corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exit(0)}}, want: true},
		{name: "exit 1, restartPolicy Never", status: corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exit(1)}}, want: true},
		{name: "last terminated, restartPolicy Never", status: corev1.ContainerStatus{LastTerminationState: corev1.ContainerState{Terminated: exit(1)}}, want: true},
		{name: "restart: exit 0", restart: true, status: corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exit(0)}}, want: true},
		{name: "restart: exit 1 restarts", restart: true, status: corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exit(1)}}},
		{name: "restart: backing off", restart: true, status: corev1.ContainerStatus{RestartCount: 1,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: corev1.ContainerState{Terminated: exit(1)}}},
		{name: "restart: restarts used up", restart: true, status: corev1.ContainerStatus{RestartCount: 2,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: corev1.ContainerState{Terminated: exit(1)}}, want: true},
		{name: "restart: backoffLimit 3", restart: true, limit: ptr.To[int32](3), status: corev1.ContainerStatus{RestartCount: 2,
			LastTerminationState: corev1.ContainerState{Terminated: exit(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{cfg: Config{SidecarSubmitterRestart: tt.restart}}
			job := &rayv1.RayJob{Spec: rayv1.RayJobSpec{SubmissionMode: rayv1.SidecarMode}}
			if tt.limit != nil {
				job.Spec.SubmitterConfig = &rayv1.SubmitterConfig{BackoffLimit: tt.limit}
			}
			if got := r.submitterEnded(job, &tt.status); got != tt.want {
				t.Errorf("submitterEnded = %v, want %v", got, tt.want)
			}
		})
	}
}
