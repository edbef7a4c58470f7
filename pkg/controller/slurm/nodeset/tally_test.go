package nodeset

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kevents "k8s.io/client-go/tools/events"

	"github.com/gantry-dev/gantry/pkg/framework/events"
)

// TestTallyEventReasons: what a reconcile did to pods is reported with the
// reasons Slinky uses for the same happening (so alerts written for Slinky
// keep firing), each aggregated over the reconcile's pods, besides the
// pod reasons of Kubernetes' workload controllers.
func TestTallyEventReasons(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name   string
		daemon bool
		fill   func(*tally)
		// want lists "<type> <reason>: <substring of the message>".
		want []string
	}{
		{name: "nothing happened"},
		{
			name: "scale out",
			fill: func(t *tally) { t.created = 3 },
			want: []string{"Normal ScalingUp: Created 3 Pods", "Normal SuccessfulCreate: Created 3 Pods"},
		},
		{
			name: "scale in",
			fill: func(t *tally) { t.add(&t.deletedScaleIn, pod("cpu-2", corev1.PodRunning)) },
			want: []string{"Normal ScalingDown: cpu-2", "Normal SuccessfulDelete: to scale in: cpu-2"},
		},
		{
			name: "rolling update",
			fill: func(t *tally) {
				t.add(&t.deletedUpdate, pod("cpu-0", corev1.PodRunning))
				t.add(&t.deletedUpdate, pod("cpu-1", corev1.PodRunning))
			},
			want: []string{"Normal RollingUpdate: cpu-0, cpu-1", "Normal SuccessfulDelete: to roll out a new revision: cpu-0, cpu-1"},
		},
		{
			name: "Kubernetes node cordoned",
			fill: func(t *tally) { t.add(&t.cordonedForNode, pod("cpu-0", corev1.PodRunning)) },
			want: []string{"Normal NodeCordon: cpu-0"},
		},
		{
			name: "slurmd not registered",
			fill: func(t *tally) { t.add(&t.deletedUnregistered, pod("cpu-0", corev1.PodRunning)) },
			want: []string{
				"Normal SuccessfulDelete: whose slurmd Slurm does not list, to recreate them: cpu-0",
				"Warning SlurmNodeNotRegistered: cpu-0",
			},
		},
		{
			name: "StatefulSet mode: a failed pod is a warning, a succeeded one is not",
			fill: func(t *tally) {
				t.add(&t.deletedFinished, pod("cpu-0", corev1.PodFailed))
				t.add(&t.deletedFinished, pod("cpu-1", corev1.PodSucceeded))
			},
			want: []string{
				"Normal SuccessfulDelete: that had exited, to recreate them: cpu-0, cpu-1",
				"Warning FailedNodeSetPod: cpu-0",
			},
		},
		{
			name:   "DaemonSet mode: exited pods as Slinky reports them",
			daemon: true,
			fill: func(t *tally) {
				t.add(&t.deletedFinished, pod("cpu-aaaaa", corev1.PodFailed))
				t.add(&t.deletedFinished, pod("cpu-bbbbb", corev1.PodSucceeded))
			},
			want: []string{
				"Normal ScalingDown: cpu-aaaaa, cpu-bbbbb",
				"Normal SuccessfulDelete: that had exited, to recreate them: cpu-aaaaa, cpu-bbbbb",
				"Normal SucceededDaemonPod: cpu-bbbbb",
				"Warning FailedDaemonPod: cpu-aaaaa",
			},
		},
		{
			name:   "DaemonSet mode: node mismatch and hostname change",
			daemon: true,
			fill: func(t *tally) {
				renamed := pod("cpu-bbbbb", corev1.PodRunning)
				t.markRenamed([]*corev1.Pod{renamed})
				t.add(&t.deletedNodeMismatch, pod("cpu-aaaaa", corev1.PodRunning))
				t.add(&t.deletedUpdate, renamed)
				t.add(&t.deletedUpdate, pod("cpu-ccccc", corev1.PodRunning))
			},
			want: []string{
				"Normal ScalingDown: cpu-aaaaa, cpu-bbbbb",
				// One event per reason and reconcile, its messages joined.
				"Normal SuccessfulDelete: to roll out a new revision: cpu-bbbbb, cpu-ccccc; Deleted 1 Pod whose Kubernetes node is gone or no longer matches the NodeSet: cpu-aaaaa",
				"Normal HostnameMismatch: cpu-bbbbb",
				"Normal RollingUpdate: cpu-ccccc",
			},
		},
		{
			name: "Gantry's own happenings keep Gantry's reasons",
			fill: func(t *tally) {
				t.add(&t.adopted, pod("cpu-0", corev1.PodRunning))
				t.add(&t.draining, pod("cpu-1", corev1.PodRunning))
			},
			want: []string{"Normal Adopted: cpu-0", "Normal Draining: cpu-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ta tally
			if tt.fill != nil {
				tt.fill(&ta)
			}
			fake := kevents.NewFakeRecorder(100)
			rec := events.NewRecorder(fake)
			regarding := &corev1.Pod{}
			var log events.Log
			warnings := ta.note(&log, tt.daemon)
			log.Flush(rec, regarding)
			for _, w := range warnings {
				w.record(rec, regarding)
			}
			close(fake.Events)
			var got []string
			for e := range fake.Events {
				got = append(got, e)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("events %q, want %d: %q", got, len(tt.want), tt.want)
			}
			for _, want := range tt.want {
				head, sub, _ := strings.Cut(want, ": ")
				if !slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, head+" ") && strings.Contains(e, sub) }) {
					t.Errorf("no event %q in %q", want, got)
				}
			}
		})
	}
}
