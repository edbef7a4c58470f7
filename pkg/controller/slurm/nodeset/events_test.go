package nodeset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kevents "k8s.io/client-go/tools/events"

	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestPodEventReasons: what a reconcile did to pods is reported with the
// reasons Slinky uses for the same happening (so alerts written for Slinky
// keep firing), each aggregated over the reconcile's pods, besides the
// pod reasons of Kubernetes' workload controllers. The steps note pods in
// the scope; Status reports them (reportPods) through the scope's events
// log, and the Warnings at once.
func TestPodEventReasons(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	onNode := func(name, node string) *corev1.Pod {
		p := pod(name, "")
		p.Spec.NodeName = node
		return p
	}
	tests := []struct {
		name   string
		daemon bool
		fill   func(*scope)
		// want are the events, "<type> <reason> <message>", in any order.
		want []string
	}{
		{name: "nothing happened"},
		{
			name: "scale out",
			fill: func(s *scope) {
				s.noteCreated(pod("cpu-0", ""))
				s.noteCreated(pod("cpu-1", ""))
				s.noteCreated(pod("cpu-2", ""))
			},
			want: []string{"Normal ScalingUp Created 3 Pods", "Normal SuccessfulCreate Created 3 Pods"},
		},
		{
			name:   "DaemonSet mode: created for their nodes",
			daemon: true,
			fill: func(s *scope) {
				s.noteCreatedOn(onNode("cpu-bbbbb", "kn-b"))
				s.noteCreatedOn(onNode("cpu-aaaaa", "kn-a"))
			},
			want: []string{
				"Normal ScalingUp Created 2 Pods for the Kubernetes nodes kn-a, kn-b",
				"Normal SuccessfulCreate Created 2 Pods for the Kubernetes nodes kn-a, kn-b",
			},
		},
		{
			name: "scale in",
			fill: func(s *scope) { s.noteDeleted(cordonedForScaleIn, pod("cpu-2", corev1.PodRunning)) },
			want: []string{"Normal ScalingDown Deleted 1 Pod: cpu-2", "Normal SuccessfulDelete Deleted 1 Pod to scale in: cpu-2"},
		},
		{
			name: "rolling update",
			fill: func(s *scope) {
				s.noteDeleted(cordonedForUpdate, pod("cpu-1", corev1.PodRunning))
				s.noteDeleted(cordonedForUpdate, pod("cpu-0", corev1.PodRunning))
			},
			want: []string{
				"Normal RollingUpdate Replaced 2 Pods of an old revision: cpu-0, cpu-1",
				"Normal SuccessfulDelete Deleted 2 Pods to roll out a new revision: cpu-0, cpu-1",
			},
		},
		{
			name: "Kubernetes node cordoned",
			fill: func(s *scope) { s.noteCordonedForNode(pod("cpu-0", corev1.PodRunning)) },
			want: []string{"Normal NodeCordon Cordoned 1 Pod because their Kubernetes Node was cordoned: cpu-0"},
		},
		{
			name: "slurmd not registered",
			fill: func(s *scope) { s.noteDeleted(whyUnregistered, pod("cpu-0", corev1.PodRunning)) },
			want: []string{
				"Normal SuccessfulDelete Deleted 1 Pod whose slurmd Slurm does not list, to recreate them: cpu-0",
				"Warning SlurmNodeNotRegistered Deleted 1 Pod whose slurmd Slurm does not list although healthy, to recreate them: cpu-0",
			},
		},
		{
			name: "StatefulSet mode: a failed pod is a warning, a succeeded one is not",
			fill: func(s *scope) {
				s.noteDeleted(whyExited, pod("cpu-0", corev1.PodFailed))
				s.noteDeleted(whyExited, pod("cpu-1", corev1.PodSucceeded))
			},
			want: []string{
				"Normal SuccessfulDelete Deleted 2 Pods that had exited, to recreate them: cpu-0, cpu-1",
				"Warning FailedNodeSetPod Deleted 1 Pod that failed, to recreate them: cpu-0",
			},
		},
		{
			name:   "DaemonSet mode: exited pods as Slinky reports them",
			daemon: true,
			fill: func(s *scope) {
				s.noteDeleted(whyExited, pod("cpu-aaaaa", corev1.PodFailed))
				s.noteDeleted(whyExited, pod("cpu-bbbbb", corev1.PodSucceeded))
			},
			want: []string{
				"Normal ScalingDown Deleted 2 Pods: cpu-aaaaa, cpu-bbbbb",
				"Normal SuccessfulDelete Deleted 2 Pods that had exited, to recreate them: cpu-aaaaa, cpu-bbbbb",
				"Normal SucceededDaemonPod Deleted 1 Pod that succeeded, to recreate them: cpu-bbbbb",
				"Warning FailedDaemonPod Deleted 1 Pod that failed, to recreate them: cpu-aaaaa",
			},
		},
		{
			name:   "DaemonSet mode: node mismatch and hostname change",
			daemon: true,
			fill: func(s *scope) {
				renamed := pod("cpu-bbbbb", corev1.PodRunning)
				s.daemon = &daemonPlan{renamed: []*corev1.Pod{renamed}}
				s.noteDeleted(cordonedForNodeMismatch, pod("cpu-aaaaa", corev1.PodRunning))
				s.noteDeleted(cordonedForUpdate, renamed)
				s.noteDeleted(cordonedForUpdate, pod("cpu-ccccc", corev1.PodRunning))
			},
			want: []string{
				"Normal ScalingDown Deleted 2 Pods: cpu-aaaaa, cpu-bbbbb",
				// One event per reason and reconcile, its messages joined.
				"Normal SuccessfulDelete Deleted 2 Pods to roll out a new revision: cpu-bbbbb, cpu-ccccc; " +
					"Deleted 1 Pod whose Kubernetes node is gone or no longer matches the NodeSet: cpu-aaaaa",
				"Normal HostnameMismatch Replaced 1 Pod whose Kubernetes node's hostname changed: cpu-bbbbb",
				"Normal RollingUpdate Replaced 1 Pod of an old revision: cpu-ccccc",
			},
		},
		{
			name: "Gantry's own happenings keep Gantry's reasons",
			fill: func(s *scope) {
				s.noteAdopted(pod("cpu-0", corev1.PodRunning))
				s.noteDraining(pod("cpu-1", corev1.PodRunning))
			},
			want: []string{
				"Normal Adopted Adopted 1 Pod made by another operator, without restarting them: cpu-0",
				"Normal Draining Draining the Slurm nodes of 1 Pod before deleting them: cpu-1",
			},
		},
		{
			name: "a long list is cut",
			fill: func(s *scope) {
				for _, name := range []string{"c-0", "c-1", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7", "c-8", "c-9", "c-10", "c-11"} {
					s.noteDraining(pod(name, corev1.PodRunning))
				}
			},
			want: []string{"Normal Draining Draining the Slurm nodes of 12 Pods before deleting them: " +
				"c-0, c-1, c-10, c-11, c-2, c-3, c-4, c-5, c-6, c-7 and 2 more"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj()
			if tt.daemon {
				n = slinkytesting.MakeNodeSet("cpu", "ns", "slurm").DaemonSet().Obj()
			}
			fake := kevents.NewFakeRecorder(100)
			r := newReconciler(nil, nil, nil, fake)
			s := newTestScope(n, loadSlurmView(t.Context(), nil, t0))
			if tt.fill != nil {
				tt.fill(s)
			}
			r.reportPods(s)
			s.Events.Flush(r.Recorder, n)
			close(fake.Events)
			var got []string
			for e := range fake.Events {
				got = append(got, e)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("events:\n%q\nwant:\n%q", got, want)
			}
		})
	}
}
