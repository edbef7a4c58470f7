package nodeset

import (
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
)

// DefaultMaxUnavailable is the rolling update budget when none is set.
var DefaultMaxUnavailable = intstr.FromString("25%")

// isAvailable reports a pod ready for at least minReadySeconds.
func isAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := podcond.ReadyCondition(pod)
	if c == nil {
		return false
	}
	return minReadySeconds == 0 || !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// isHealthy is a running, ready pod that is not going away.
func isHealthy(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podcond.IsReady(pod) && !isTerminating(pod)
}

func deletionCost(pod *corev1.Pod) int64 {
	v, err := strconv.ParseInt(pod.Annotations[slinkyv1beta1.AnnotationPodDeletionCost], 10, 32)
	if err != nil {
		return 0
	}
	return v
}

// podDeadline is the pod-deadline annotation; zero (no running job with a
// time limit) when absent or unreadable.
func podDeadline(pod *corev1.Pod) time.Time {
	t, err := time.Parse(time.RFC3339, pod.Annotations[slinkyv1beta1.AnnotationPodDeadline])
	if err != nil {
		return time.Time{}
	}
	return t
}

var phaseWeight = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// deleteBefore reports whether a should be removed before b on scale-in:
// the pod whose loss costs least goes first. Order: unscheduled, then by
// phase (Pending, Unknown, Running), not ready, lower deletion cost,
// earlier deadline (no deadline first: nothing runs there), cordoned,
// higher ordinal, more recently ready, newer.
func deleteBefore(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if wa, wb := phaseWeight[a.Status.Phase], phaseWeight[b.Status.Phase]; wa != wb {
		return wa < wb
	}
	if ra, rb := podcond.IsReady(a), podcond.IsReady(b); ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if da, db := podDeadline(a), podDeadline(b); !da.Equal(db) {
		return da.Before(db)
	}
	if ca, cb := isPodCordoned(a), isPodCordoned(b); ca != cb {
		return ca
	}
	if oa, ob := ordinalOf(a), ordinalOf(b); oa != ob {
		return oa > ob
	}
	if podcond.IsReady(a) && podcond.IsReady(b) {
		ta, tb := podcond.ReadyCondition(a).LastTransitionTime.Time, podcond.ReadyCondition(b).LastTransitionTime.Time
		if !ta.Equal(tb) {
			return afterOrZero(ta, tb)
		}
	}
	return afterOrZero(a.CreationTimestamp.Time, b.CreationTimestamp.Time)
}

// afterOrZero orders a zero time first, then later times first.
func afterOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && !b.IsZero()
	}
	return a.After(b)
}

// chooseVictims returns the n pods to remove and the rest. A pod being
// drained has no other precedence than its cordon (deleteBefore): when its
// job runs on and another pod's ended, the other goes first, as in Slinky,
// rather than keeping a busy node drained while an idle one serves.
func chooseVictims(pods []*corev1.Pod, n int) (victims, keep []*corev1.Pod) {
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b *corev1.Pod) int {
		// Pods already going count first: deleting them again costs nothing.
		if ta, tb := isTerminating(a), isTerminating(b); ta != tb {
			if ta {
				return -1
			}
			return 1
		}
		switch {
		case deleteBefore(a, b):
			return -1
		case deleteBefore(b, a):
			return 1
		}
		return 0
	})
	n = min(max(n, 0), len(sorted))
	return sorted[:n], sorted[n:]
}

// splitUnhealthy separates pods that are not running and ready, oldest first.
func splitUnhealthy(pods []*corev1.Pod) (unhealthy, healthy []*corev1.Pod) {
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return compareStrings(a.Name, b.Name)
	})
	for _, p := range sorted {
		if isHealthy(p) {
			healthy = append(healthy, p)
		} else {
			unhealthy = append(unhealthy, p)
		}
	}
	return unhealthy, healthy
}

// MaxUnavailable resolves the rolling update budget against the desired
// replicas: an integer as is, a percentage rounded up. At least one pod
// may always be unavailable, or an update could never start.
func MaxUnavailable(n *slinkyv1beta1.NodeSet, total int) int {
	v := n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable
	if v == nil {
		v = &DefaultMaxUnavailable
	}
	scaled, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil || scaled < 1 {
		return 1
	}
	return scaled
}

// splitByRevision separates live pods at the update revision from older ones.
func splitByRevision(pods []*corev1.Pod, hash string) (updated, old []*corev1.Pod) {
	for _, p := range pods {
		if isTerminating(p) {
			continue
		}
		if p.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] == hash {
			updated = append(updated, p)
		} else {
			old = append(old, p)
		}
	}
	return updated, old
}

// rollingUpdateVictims picks the healthy old pods to replace now. Updated
// pods that are not yet available and replica slots with no live pod use
// up the budget first; unhealthy old pods are replaced separately and do
// not count, since replacing them cannot make anything less available.
func rollingUpdateVictims(n *slinkyv1beta1.NodeSet, pods []*corev1.Pod, hash string, now time.Time) []*corev1.Pod {
	return rollingUpdateVictimsOf(n, pods, hash, int(desiredReplicas(n)), now)
}

// rollingUpdateVictimsOf is rollingUpdateVictims for a NodeSet that should
// run total pods.
func rollingUpdateVictimsOf(n *slinkyv1beta1.NodeSet, pods []*corev1.Pod, hash string, total int, now time.Time) []*corev1.Pod {
	updated, old := splitByRevision(pods, hash)
	_, healthyOld := splitUnhealthy(old)
	unavailable := min(max(total-len(updated)-len(old), 0), total)
	for _, p := range updated {
		if !isAvailable(p, n.Spec.MinReadySeconds, now) {
			unavailable++
		}
	}
	budget := MaxUnavailable(n, total)
	remaining := min(max(budget-unavailable, 0), budget)
	victims, _ := chooseVictims(healthyOld, remaining)
	return victims
}

func desiredReplicas(n *slinkyv1beta1.NodeSet) int32 {
	if n.Spec.Replicas == nil {
		return 1
	}
	return *n.Spec.Replicas
}
