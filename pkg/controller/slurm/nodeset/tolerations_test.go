package nodeset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestPodTolerations: every slurmd pod tolerates Slinky's worker taint, and
// a DaemonSet-mode pod also outlasts a node that stops reporting (the
// tolerations Kubernetes gives DaemonSet pods), both added to the user's
// tolerations without repeating one the user already gave.
func TestPodTolerations(t *testing.T) {
	worker := corev1.Toleration{Key: "nodeset.slinky.slurm.net/worker", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	unreachable := corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name   string
		daemon bool
		user   []corev1.Toleration
		want   []corev1.Toleration
	}{
		{name: "StatefulSet mode, no user tolerations", want: []corev1.Toleration{worker}},
		{name: "StatefulSet mode, the user's come first", user: []corev1.Toleration{gpu}, want: []corev1.Toleration{gpu, worker}},
		{name: "the user's own worker toleration is not repeated", user: []corev1.Toleration{gpu, worker}, want: []corev1.Toleration{gpu, worker}},
		{
			name: "an unset operator is Equal: not repeated, the user's kept",
			user: []corev1.Toleration{{Key: worker.Key, Effect: worker.Effect, TolerationSeconds: ptr.To[int64](60)}},
			want: []corev1.Toleration{{Key: worker.Key, Effect: worker.Effect, TolerationSeconds: ptr.To[int64](60)}},
		},
		{name: "DaemonSet mode adds the node-outage tolerations", daemon: true, want: []corev1.Toleration{worker, notReady, unreachable}},
		{
			name: "DaemonSet mode: a bounded not-ready toleration becomes unbounded, as Kubernetes does for DaemonSets", daemon: true,
			user: []corev1.Toleration{gpu, {Key: notReady.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
			want: []corev1.Toleration{gpu, notReady, worker, unreachable},
		},
		{name: "DaemonSet mode, user's copies not repeated", daemon: true, user: []corev1.Toleration{unreachable, worker}, want: []corev1.Toleration{unreachable, worker, notReady}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := slinkytesting.MakeNodeSet("cpu", "ns", "slurm")
			if tt.daemon {
				w = w.DaemonSet()
			}
			n := w.Obj()
			n.Spec.Template.Spec.Tolerations = tt.user
			in := PodInputs{Controller: slinkytesting.MakeController("slurm", "ns").Obj()}
			var pods map[string]*corev1.Pod
			if tt.daemon {
				pods = map[string]*corev1.Pod{
					"BuildDaemonPod": BuildDaemonPod(n, makeNode("node-a").obj(), in),
					"schedulingPod":  schedulingPod(n),
				}
			} else {
				pods = map[string]*corev1.Pod{"BuildPod": BuildPod(n, 0, in)}
			}
			for built, pod := range pods {
				if diff := cmp.Diff(tt.want, pod.Spec.Tolerations); diff != "" {
					t.Errorf("%s tolerations (-want +got):\n%s", built, diff)
				}
			}
			if diff := cmp.Diff(tt.user, n.Spec.Template.Spec.Tolerations); diff != "" {
				t.Errorf("the NodeSet's template was modified (-was +now):\n%s", diff)
			}
		})
	}
}
