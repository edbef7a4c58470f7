package nodeset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// syncTopology carries each Kubernetes Node's Slurm topology annotation
// (topology.slinky.slurm.net/spec, e.g. "topo-switch:s1") to the slurmd
// pods on it and to their Slurm nodes, as Slinky does: the pod's copy is
// what slurmd reads as POD_TOPOLOGY when it (re)starts, the Slurm node's
// is what the scheduler uses now.
//
// Unlike Slinky, a Node without the annotation leaves the Slurm node's
// topology alone rather than clearing it: it may come from the slurmd's
// own --conf or an administrator.
func (r *Reconciler) syncTopology(ctx context.Context, s *scope) error {
	return forEachWorker(s.workers.live(), func(w *worker) error {
		pod := w.pod
		kubeNode, err := r.kubeNode(ctx, pod)
		if err != nil || kubeNode == nil {
			return err
		}
		spec := kubeNode.Annotations[slinkyv1beta1.AnnotationNodeTopologySpec]
		if err := r.patchPod(ctx, pod, func(p *corev1.Pod) {
			setAnnotation(p, slinkyv1beta1.AnnotationNodeTopologySpec, spec)
		}); err != nil {
			return err
		}
		if spec == "" {
			return nil
		}
		return s.slurm.setTopology(ctx, w.slurmNode, spec)
	})
}

// setTopology updates the Slurm node name to topology unless it has it.
func (v *slurmView) setTopology(ctx context.Context, name, topology string) error {
	if !v.reachable() {
		return nil
	}
	n, ok := v.node(name)
	if !ok || n.Topology == topology {
		return nil
	}
	if err := v.client.UpdateNode(ctx, name, slurm.TopologyUpdate(topology)); err != nil {
		if slurm.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting the topology of Slurm node %s: %w", name, err)
	}
	n.Topology = topology
	v.setNode(n)
	return nil
}
