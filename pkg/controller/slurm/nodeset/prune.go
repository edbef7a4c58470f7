package nodeset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// ReasonDefunctSlurmNodePruned is the event of Slurm node records deleted
// under pruneSlurmNodeRecords: NodeNotFound (Slinky's reason).
const ReasonDefunctSlurmNodePruned = "DefunctSlurmNodePruned"

// defunctNode is a Slurm node record that names, in its comment, a pod of
// the NodeSet, and that slurmctld reports DOWN and NOT_RESPONDING.
type defunctNode struct {
	name string
	pod  podInfo
}

// defunctCandidates are the NodeSet's Slurm node records that may be
// defunct, from this reconcile's node list: DOWN+NOT_RESPONDING, the
// comment Gantry (or Slinky) wrote naming a pod of this very NodeSet (its
// UID, so a NodeSet recreated under the same name does not inherit them),
// and nothing running there.
func defunctCandidates(n *slinkyv1beta1.NodeSet, view *slurmView) []defunctNode {
	view.mu.Lock()
	defer view.mu.Unlock()
	var out []defunctNode
	for name, node := range view.nodes {
		if !node.HasState(slurm.NodeStateDown) || !node.HasState(slurm.NodeStateNotResponding) {
			continue
		}
		if node.IsBusy() || !view.deadlines[name].IsZero() {
			continue // a job runs there (or may): never pruned
		}
		var info podInfo
		if err := json.Unmarshal([]byte(node.Comment), &info); err != nil {
			continue
		}
		if info.Namespace != n.Namespace || info.PodName == "" || info.NodeSetName != n.Name ||
			info.NodeSetUID == "" || info.NodeSetUID != string(n.UID) {
			continue
		}
		out = append(out, defunctNode{name: name, pod: info})
	}
	slices.SortFunc(out, func(a, b defunctNode) int { return strings.Compare(a.name, b.name) })
	return out
}

// syncSlurmNodeRecords prunes, under pruneSlurmNodeRecords: NodeNotFound
// and in DaemonSet mode only (Slinky's rule), the Slurm node records whose
// pod is gone and whose Kubernetes node is gone or now gives its pod
// another hostname: slurmd will never come back under that name. With
// Slurm unreadable nothing is pruned. Pods and Nodes are read from the
// API server: a cache that has not seen them yet must not cost a record.
func (r *Reconciler) syncSlurmNodeRecords(ctx context.Context, s *scope) error {
	n := s.Object
	if n.Spec.PruneSlurmNodeRecords != slinkyv1beta1.NodeSetPruneNodeRecordTypeNodeNotFound ||
		!isDaemonSetMode(n) || !s.slurm.reachable() {
		return nil
	}
	var pruned []string
	var errs []error
	for _, d := range defunctCandidates(n, s.slurm) {
		prune, err := r.isDefunct(ctx, n, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !prune {
			continue
		}
		if err := s.slurm.client.DeleteNode(ctx, d.name); err != nil && !slurm.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting defunct Slurm node %s (pod %s, Kubernetes node %s): %w", d.name, d.pod.PodName, d.pod.Node, err))
			continue
		}
		s.slurm.forget(d.name)
		pruned = append(pruned, fmt.Sprintf("%s (pod %s, Kubernetes node %s)", d.name, d.pod.PodName, d.pod.Node))
	}
	if len(pruned) > 0 {
		s.Events.Add(ReasonDefunctSlurmNodePruned, "Deleted defunct Slurm node(s) %s: the pod is gone and the Kubernetes node is gone or no longer maps to the Slurm node",
			joinCapped(pruned, 10))
	}
	if len(errs) > 0 {
		return fmt.Errorf("pruning Slurm node records: %w", errors.Join(errs...))
	}
	return nil
}

// isDefunct reports whether d's pod is gone and its Kubernetes node is gone
// or gives a new pod another Slurm node name. A record whose comment names
// no Kubernetes node is kept, as Slinky keeps it.
func (r *Reconciler) isDefunct(ctx context.Context, n *slinkyv1beta1.NodeSet, d defunctNode) (bool, error) {
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: d.pod.Namespace, Name: d.pod.PodName}, &corev1.Pod{})
	switch {
	case err == nil:
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, err
	}
	if d.pod.Node == "" {
		return false, nil
	}
	node := &corev1.Node{}
	err = r.APIReader.Get(ctx, client.ObjectKey{Name: d.pod.Node}, node)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	want := daemonPodHostnameOf(node)
	if n.Spec.Template.Spec.HostNetwork {
		// On the host network slurmd registers the node's own name.
		want = node.Name
	}
	return want != d.name, nil
}
