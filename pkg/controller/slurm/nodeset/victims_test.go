package nodeset

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// podWrapper builds pods for the ordering tests.
type podWrapper struct{ corev1.Pod }

func makePod(name string) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       corev1.PodSpec{NodeName: "node-" + name},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (w *podWrapper) unscheduled() *podWrapper { w.Spec.NodeName = ""; return w }
func (w *podWrapper) phase(p corev1.PodPhase) *podWrapper {
	w.Status.Phase = p
	return w
}
func (w *podWrapper) ready(since time.Time) *podWrapper {
	w.Status.Conditions = append(w.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since),
	})
	return w
}
func (w *podWrapper) annotate(k, v string) *podWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}
func (w *podWrapper) hash(h string) *podWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] = h
	return w
}
func (w *podWrapper) created(t time.Time) *podWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}
func (w *podWrapper) terminating() *podWrapper {
	w.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	return w
}
func (w *podWrapper) obj() *corev1.Pod { return w.DeepCopy() }

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestChooseVictimsOrder(t *testing.T) {
	readyPod := func(name string) *podWrapper { return makePod(name).ready(t0) }
	tests := []struct {
		name string
		pods []*corev1.Pod
		want []string // full deletion order
	}{
		{
			name: "unscheduled before scheduled",
			pods: []*corev1.Pod{readyPod("ns-0").obj(), makePod("ns-1").unscheduled().phase(corev1.PodPending).obj()},
			want: []string{"ns-1", "ns-0"},
		},
		{
			name: "pending before unknown before running",
			pods: []*corev1.Pod{
				makePod("ns-0").obj(), makePod("ns-1").phase(corev1.PodUnknown).obj(), makePod("ns-2").phase(corev1.PodPending).obj(),
			},
			want: []string{"ns-2", "ns-1", "ns-0"},
		},
		{
			name: "not ready before ready",
			pods: []*corev1.Pod{readyPod("ns-0").obj(), makePod("ns-1").obj()},
			want: []string{"ns-1", "ns-0"},
		},
		{
			name: "lower deletion cost first, missing cost is zero",
			pods: []*corev1.Pod{
				readyPod("ns-0").annotate(slinkyv1beta1.AnnotationPodDeletionCost, "10").obj(),
				readyPod("ns-1").obj(),
				readyPod("ns-2").annotate(slinkyv1beta1.AnnotationPodDeletionCost, "-5").obj(),
			},
			want: []string{"ns-2", "ns-1", "ns-0"},
		},
		{
			name: "no deadline, then earlier deadline first",
			pods: []*corev1.Pod{
				readyPod("ns-0").annotate(slinkyv1beta1.AnnotationPodDeadline, t0.Add(2*time.Hour).Format(time.RFC3339)).obj(),
				readyPod("ns-1").annotate(slinkyv1beta1.AnnotationPodDeadline, t0.Add(time.Hour).Format(time.RFC3339)).obj(),
				readyPod("ns-2").obj(),
			},
			want: []string{"ns-2", "ns-1", "ns-0"},
		},
		{
			name: "cordoned before uncordoned",
			pods: []*corev1.Pod{readyPod("ns-0").annotate(slinkyv1beta1.AnnotationPodCordon, "true").obj(), readyPod("ns-1").obj()},
			want: []string{"ns-0", "ns-1"},
		},
		{
			name: "higher ordinal first",
			pods: []*corev1.Pod{readyPod("ns-2").obj(), readyPod("ns-10").obj(), readyPod("ns-1").obj()},
			want: []string{"ns-10", "ns-2", "ns-1"},
		},
		{
			name: "deletion cost outranks deadline and ordinal",
			pods: []*corev1.Pod{
				readyPod("ns-9").annotate(slinkyv1beta1.AnnotationPodDeletionCost, "1").obj(),
				readyPod("ns-0").annotate(slinkyv1beta1.AnnotationPodDeadline, t0.Add(time.Hour).Format(time.RFC3339)).obj(),
			},
			want: []string{"ns-0", "ns-9"},
		},
		{
			name: "terminating pods before anything else",
			pods: []*corev1.Pod{
				makePod("ns-0").unscheduled().phase(corev1.PodPending).obj(),
				readyPod("ns-1").obj(),
				readyPod("ns-2").terminating().obj(),
			},
			want: []string{"ns-2", "ns-0", "ns-1"},
		},
		{
			// Slinky ranks afresh every pass: the drain of a node whose job
			// runs on is given up for a node whose job ended.
			name: "a pod being drained whose job runs on goes after an idle pod",
			pods: []*corev1.Pod{
				readyPod("ns-0").obj(),
				readyPod("ns-1").annotate(slinkyv1beta1.AnnotationPodCordon, "true").annotate(AnnotationCordonedBy, cordonedForScaleIn).
					annotate(slinkyv1beta1.AnnotationPodDeadline, t0.Add(24*time.Hour).Format(time.RFC3339)).obj(),
			},
			want: []string{"ns-0", "ns-1"},
		},
		{
			name: "a pod being drained goes before its equals",
			pods: []*corev1.Pod{
				readyPod("ns-2").obj(),
				readyPod("ns-1").annotate(slinkyv1beta1.AnnotationPodCordon, "true").annotate(AnnotationCordonedBy, cordonedForScaleIn).obj(),
			},
			want: []string{"ns-1", "ns-2"},
		},
		{
			name: "a user's cordon does not count as a drain in progress",
			pods: []*corev1.Pod{
				makePod("ns-0").obj(),
				readyPod("ns-1").annotate(slinkyv1beta1.AnnotationPodCordon, "true").obj(),
			},
			want: []string{"ns-0", "ns-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest := chooseVictims(tt.pods, len(tt.pods))
			if fmt.Sprint(names(got)) != fmt.Sprint(tt.want) || len(rest) != 0 {
				t.Errorf("order = %v (rest %v), want %v", names(got), names(rest), tt.want)
			}
			// Choosing fewer takes a prefix of the same order.
			got1, rest1 := chooseVictims(tt.pods, 1)
			if len(got1) != 1 || got1[0].Name != tt.want[0] || len(rest1) != len(tt.pods)-1 {
				t.Errorf("first victim = %v, want %s", names(got1), tt.want[0])
			}
		})
	}
}

func TestMaxUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		value *intstr.IntOrString
		total int
		want  int
	}{
		{"default 25% of 10 rounds up", nil, 10, 3},
		{"default 25% of 4", nil, 4, 1},
		{"integer", ptr.To(intstr.FromInt32(2)), 10, 2},
		{"integer above total", ptr.To(intstr.FromInt32(20)), 10, 20},
		{"percent rounds up", ptr.To(intstr.FromString("10%")), 15, 2},
		{"percent exact", ptr.To(intstr.FromString("50%")), 10, 5},
		{"zero still lets one go", ptr.To(intstr.FromInt32(0)), 10, 1},
		{"small percent of few pods is one", ptr.To(intstr.FromString("1%")), 3, 1},
		{"malformed string is one", ptr.To(intstr.FromString("abc")), 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &slinkyv1beta1.NodeSet{}
			n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = tt.value
			if got := MaxUnavailable(n, tt.total); got != tt.want {
				t.Errorf("MaxUnavailable = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRollingUpdateVictims(t *testing.T) {
	const newHash, oldHash = "new", "old"
	healthyOld := func(name string) *corev1.Pod { return makePod(name).ready(t0).hash(oldHash).obj() }
	healthyNew := func(name string) *corev1.Pod { return makePod(name).ready(t0).hash(newHash).obj() }
	tests := []struct {
		name           string
		replicas       int32
		maxUnavailable intstr.IntOrString
		minReady       int32
		pods           []*corev1.Pod
		want           []string
	}{
		{
			name: "budget of two replaces the two highest ordinals", replicas: 4, maxUnavailable: intstr.FromInt32(2),
			pods: []*corev1.Pod{healthyOld("ns-0"), healthyOld("ns-1"), healthyOld("ns-2"), healthyOld("ns-3")},
			want: []string{"ns-3", "ns-2"},
		},
		{
			name: "percentage of replicas rounds up", replicas: 5, maxUnavailable: intstr.FromString("30%"),
			pods: []*corev1.Pod{healthyOld("ns-0"), healthyOld("ns-1"), healthyOld("ns-2"), healthyOld("ns-3"), healthyOld("ns-4")},
			want: []string{"ns-4", "ns-3"},
		},
		{
			name: "an updated pod not yet ready uses the budget", replicas: 3, maxUnavailable: intstr.FromInt32(1),
			pods: []*corev1.Pod{healthyOld("ns-0"), healthyOld("ns-1"), makePod("ns-2").hash(newHash).obj()},
			want: nil,
		},
		{
			name: "an updated pod ready for less than minReadySeconds uses the budget", replicas: 2, maxUnavailable: intstr.FromInt32(1),
			minReady: 3600,
			pods:     []*corev1.Pod{healthyOld("ns-0"), makePod("ns-1").ready(time.Now()).hash(newHash).obj()},
			want:     nil,
		},
		{
			name: "a missing replica (pod terminating) uses the budget", replicas: 3, maxUnavailable: intstr.FromInt32(1),
			pods: []*corev1.Pod{healthyOld("ns-0"), healthyOld("ns-1"), makePod("ns-2").hash(oldHash).terminating().obj()},
			want: nil,
		},
		{
			name: "unhealthy old pods are not counted nor chosen", replicas: 3, maxUnavailable: intstr.FromInt32(1),
			pods: []*corev1.Pod{healthyOld("ns-0"), healthyOld("ns-1"), makePod("ns-2").hash(oldHash).obj()},
			want: []string{"ns-1"},
		},
		{
			name: "all updated: nothing to do", replicas: 2, maxUnavailable: intstr.FromInt32(2),
			pods: []*corev1.Pod{healthyNew("ns-0"), healthyNew("ns-1")},
			want: nil,
		},
		{
			name: "a drain in progress keeps its slot", replicas: 3, maxUnavailable: intstr.FromInt32(1),
			pods: []*corev1.Pod{
				makePod("ns-0").ready(t0).hash(oldHash).annotate(slinkyv1beta1.AnnotationPodCordon, "true").annotate(AnnotationCordonedBy, cordonedForUpdate).obj(),
				healthyOld("ns-1"), healthyOld("ns-2"),
			},
			want: []string{"ns-0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &slinkyv1beta1.NodeSet{}
			n.Spec.Replicas = ptr.To(tt.replicas)
			n.Spec.MinReadySeconds = tt.minReady
			n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(tt.maxUnavailable)
			got := rollingUpdateVictims(n, tt.pods, newHash, time.Now())
			if fmt.Sprint(names(got)) != fmt.Sprint(tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("victims = %v, want %v", names(got), tt.want)
			}
		})
	}
}

func TestSplitUnhealthy(t *testing.T) {
	pods := []*corev1.Pod{
		makePod("ns-0").ready(t0).created(t0).obj(),
		makePod("ns-1").created(t0.Add(time.Minute)).obj(),
		makePod("ns-2").phase(corev1.PodPending).created(t0.Add(-time.Minute)).obj(),
		makePod("ns-3").ready(t0).terminating().obj(),
	}
	unhealthy, healthy := splitUnhealthy(pods)
	if got, want := fmt.Sprint(names(unhealthy)), "[ns-2 ns-3 ns-1]"; got != want {
		t.Errorf("unhealthy = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(names(healthy)), "[ns-0]"; got != want {
		t.Errorf("healthy = %s, want %s", got, want)
	}
}
