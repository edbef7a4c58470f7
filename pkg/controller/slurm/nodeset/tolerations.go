package nodeset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// workerToleration lets slurmd onto the nodes an administrator keeps for it
// with Slinky's worker taint, which is NoExecute so that nothing else stays
// there; Slinky's pods carry the same toleration.
var workerToleration = corev1.Toleration{
	Key:      slinkyv1beta1.TaintKeyWorkerNode,
	Operator: corev1.TolerationOpEqual,
	Effect:   corev1.TaintEffectNoExecute,
}

// daemonTolerations keep a DaemonSet-mode pod on a node whose kubelet stops
// reporting, for as long as the outage lasts, as Kubernetes' DaemonSet
// controller keeps its pods: the slurmd is bound to that node, so evicting
// it replaces nothing, and deleting it would end the jobs slurmctld still
// counts on it. Only NoExecute: a node that is not Ready gets no new pod.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
}

// sameToleration reports two tolerations of one key, operator, value and
// effect (Kubernetes' identity for tolerations); an unset operator is Equal.
func sameToleration(a, b corev1.Toleration) bool {
	op := func(o corev1.TolerationOperator) corev1.TolerationOperator {
		if o == "" {
			return corev1.TolerationOpEqual
		}
		return o
	}
	return a.Key == b.Key && op(a.Operator) == op(b.Operator) && a.Value == b.Value && a.Effect == b.Effect
}

// addToleration returns list with t appended unless list has the same
// toleration already: then the user's stays as written (its
// tolerationSeconds included), or is replaced by t when override is set.
func addToleration(list []corev1.Toleration, t corev1.Toleration, override bool) []corev1.Toleration {
	i := slices.IndexFunc(list, func(u corev1.Toleration) bool { return sameToleration(u, t) })
	switch {
	case i < 0:
		return append(slices.Clone(list), t)
	case override:
		out := slices.Clone(list)
		out[i] = t
		return out
	}
	return list
}

// addPodTolerations adds what every NodeSet pod tolerates to the template's
// tolerations. The user's list replaces the operator's whole in the merge
// (it is atomic), so they are added after it. In DaemonSet mode a user's
// bounded tolerationSeconds for an outage taint is overridden, as Kubernetes
// overrides it for DaemonSet pods: a pod evicted from its node has nowhere
// else to go.
func addPodTolerations(n *slinkyv1beta1.NodeSet, spec *corev1.PodSpec) {
	spec.Tolerations = addToleration(spec.Tolerations, workerToleration, false)
	if !isDaemonSetMode(n) {
		return
	}
	for _, t := range daemonTolerations {
		spec.Tolerations = addToleration(spec.Tolerations, t, true)
	}
}
