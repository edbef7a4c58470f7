package nodeset

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/pkg/framework/podcond"
)

// unregisteredGrace is how long a pod may be Ready (and available) with no
// Slurm node before it is replaced: slurmd registers before its readiness
// probe passes, so a pod still unlisted after this lost its node (an
// administrator deleted it) or never had one.
const unregisteredGrace = 30 * time.Second

// whyUnregistered is the deletion reason of a pod replaced for that.
const whyUnregistered = "unregistered"

// syncUnregistered replaces healthy pods whose Slurm node Slurm does not
// list, as Slinky does: such a slurmd serves no job, and a new pod
// registers again. It fails closed: nothing is replaced while Slurm cannot
// be read, and a pod is kept (and reported, as for scale-in) while a node
// Slurm lists could be that pod's under another name, i.e. a node named
// after the pod with a domain ("<name>.example.org"), or a node with the
// NodeSet's feature that no pod of the NodeSet accounts for. Jobs can only
// run on nodes Slurm lists, so a pod none of them can be runs none.
func (r *Reconciler) syncUnregistered(ctx context.Context, s *scope) error {
	n, pods := s.Object, s.pods
	if !s.slurm.configured() || !s.slurm.reachable() {
		return nil
	}
	grace := max(unregisteredGrace, time.Duration(n.Spec.MinReadySeconds)*time.Second)
	now := r.clock.Now()
	var gone []*corev1.Pod
	for _, pod := range pods {
		if !isHealthy(pod) {
			continue
		}
		name := SlurmNodeName(pod)
		if _, ok := s.slurm.node(name); ok {
			continue
		}
		if wait := grace - now.Sub(podcond.ReadyCondition(pod).LastTransitionTime.Time); wait > 0 {
			s.Requeue.After(wait)
			continue
		}
		if s.slurm.couldBeElsewhere(name) {
			s.slurm.markUnknown(pod, name)
			continue
		}
		gone = append(gone, pod)
	}
	return forEachPod(gone, func(pod *corev1.Pod) error {
		// The list may be stale: a slurmd that registered since is kept.
		if stillGone, err := s.slurm.confirmGone(ctx, pod); err != nil || !stillGone {
			return err
		}
		return r.deletePod(ctx, n, s, pod, whyUnregistered)
	})
}

// markUnknown records a pod kept because Slurm does not list its node.
func (v *slurmView) markUnknown(pod *corev1.Pod, name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.unknown == nil {
		v.unknown = map[string]string{}
	}
	v.unknown[pod.Name] = name
}
