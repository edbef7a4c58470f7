package nodeset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// syncFeatures gives each pod's Slurm node the features its Kubernetes
// Node's features.slinky.slurm.net/spec annotation lists, each under the
// "k8s/" prefix (jobs select them with --constraint=k8s/<feature>), as
// Slinky's v1.3 line does. Gantry owns only that prefix: the node's other
// features stay, and a Node without the annotation clears the prefixed
// ones. A Node annotation change wakes the NodeSets with pods on it.
func (r *Reconciler) syncFeatures(ctx context.Context, s *scope) error {
	if !s.slurm.reachable() {
		return nil
	}
	return forEachWorker(s.workers.live(), func(w *worker) error {
		kubeNode, err := r.kubeNode(ctx, w.pod)
		if err != nil || kubeNode == nil {
			return err
		}
		return s.slurm.setFeatures(ctx, w.slurmNode, nodeFeatures(kubeNode))
	})
}

// nodeFeatures are the Node's annotated features, prefixed, sorted and
// without duplicates or empty items.
func nodeFeatures(node *corev1.Node) []string {
	var out []string
	for _, f := range strings.Split(node.Annotations[slinkyv1beta1.AnnotationNodeFeaturesSpec], ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, slinkyv1beta1.NodeFeaturePrefix+f)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// withPrefixed returns current with its prefixed features replaced by
// desired, sorted and without duplicates.
func withPrefixed(current, desired []string) []string {
	out := slices.DeleteFunc(slices.Clone(current), func(f string) bool {
		return strings.HasPrefix(f, slinkyv1beta1.NodeFeaturePrefix)
	})
	out = append(out, desired...)
	slices.Sort(out)
	return slices.Compact(out)
}

// sameSet reports whether a and b hold the same features, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// setFeatures makes the Slurm node name carry desired as its prefixed
// available and active features; nothing is sent when it does.
func (v *slurmView) setFeatures(ctx context.Context, name string, desired []string) error {
	n, ok := v.node(name)
	if !ok {
		return nil
	}
	active := n.ActiveFeatures
	if active == nil {
		active = n.Features
	}
	available, nextActive := withPrefixed(n.Features, desired), withPrefixed(active, desired)
	if sameSet(available, n.Features) && sameSet(nextActive, active) {
		return nil
	}
	if err := v.client.UpdateNode(ctx, name, slurm.FeaturesUpdate(available, nextActive)); err != nil {
		if slurm.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting the features of Slurm node %s: %w", name, err)
	}
	n.Features, n.ActiveFeatures = available, nextActive
	v.setNode(n)
	return nil
}
