package nodeset

import (
	"context"
	"time"

	"github.com/gantry-dev/gantry/pkg/framework/podcond"
)

// unregisteredGrace is how long a pod may be Ready (and available) with no
// Slurm node before it is replaced: slurmd registers before its readiness
// probe passes, so a pod still unlisted after this lost its node (an
// administrator deleted it) or never had one.
const unregisteredGrace = 30 * time.Second

// syncUnregistered replaces healthy pods whose Slurm node Slurm does not
// list, as Slinky does: such a slurmd serves no job, and a new pod
// registers again. It fails closed: nothing is replaced while Slurm cannot
// be read, and a pod is kept (and reported, as for scale-in) while a node
// Slurm lists could be that pod's under another name, i.e. a node named
// after the pod with a domain ("<name>.example.org"), or a node with the
// NodeSet's feature that no pod of the NodeSet accounts for. Jobs can only
// run on nodes Slurm lists, so a pod none of them can be runs none.
func (r *Reconciler) syncUnregistered(ctx context.Context, s *scope) error {
	n := s.Object
	if !s.slurm.configured() || !s.slurm.reachable() {
		return nil
	}
	grace := max(unregisteredGrace, time.Duration(n.Spec.MinReadySeconds)*time.Second)
	now := r.clock.Now()
	var gone []*worker
	for _, w := range s.workers.list {
		if !isHealthy(w.pod) {
			continue
		}
		if _, ok := s.slurm.node(w.slurmNode); ok {
			continue
		}
		if wait := grace - now.Sub(podcond.ReadyCondition(w.pod).LastTransitionTime.Time); wait > 0 {
			s.Requeue.After(wait)
			continue
		}
		if s.slurm.couldBeElsewhere(w.slurmNode) {
			s.slurm.markUnknown(w)
			continue
		}
		gone = append(gone, w)
	}
	return forEachWorker(gone, func(w *worker) error {
		// The list may be stale: a slurmd that registered since is kept.
		if stillGone, err := s.slurm.confirmGone(ctx, w.slurmNode); err != nil || !stillGone {
			return err
		}
		return r.deletePod(ctx, s, w, whyUnregistered)
	})
}
