package nodeset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// ReasonDefunctSlurmNodePruned is the event of Slurm node records deleted
// under pruneSlurmNodeRecords: NodeNotFound (Slinky's reason).
const ReasonDefunctSlurmNodePruned = "DefunctSlurmNodePruned"

// ReasonSlurmNodeDeleted is the event of Slurm node records Gantry retired
// itself (a scale-in's ordinals; in DaemonSet mode, nodes that no longer
// run the NodeSet under that name): no pod will register onto them again.
const ReasonSlurmNodeDeleted = "SlurmNodeDeleted"

// defunctNode is a Slurm node record that names, in its comment, a pod of
// the NodeSet.
type defunctNode struct {
	name string
	pod  podInfo
}

// recordsOfNodeSet are the Slurm node records, from this reconcile's node
// list, whose comment Gantry (or Slinky) wrote naming a pod of this very
// NodeSet (its UID, so a NodeSet recreated under the same name does not
// inherit them), that no pod of the NodeSet now registers as, that match,
// and whose deletion ends no job: nothing holds the node (by its state or
// by the job list), and no pending job asks for it by name (slurmctld
// would fail that job on its next reconfigure).
func recordsOfNodeSet(n *slinkyv1beta1.NodeSet, view *slurmView, match func(slurm.Node, podInfo) bool) []defunctNode {
	view.mu.Lock()
	defer view.mu.Unlock()
	var out []defunctNode
	for name, node := range view.nodes {
		if view.ours[name] || node.IsBusy() || view.held[name] || view.required[name] || !view.deadlines[name].IsZero() {
			continue
		}
		info, ok := recordOwner(n, node)
		if ok && match(node, info) {
			out = append(out, defunctNode{name: name, pod: info})
		}
	}
	slices.SortFunc(out, func(a, b defunctNode) int { return strings.Compare(a.name, b.name) })
	return out
}

// recordOwner reads the pod of the NodeSet that a record names in its
// comment, written by Gantry (or Slinky) once the pod was scheduled; the
// NodeSet's UID must match, so a NodeSet recreated under the same name
// does not inherit records. In StatefulSet mode a record without a comment
// (its pod went before it was scheduled, or before a reconcile saw it)
// is the NodeSet's when it carries the NodeSet's feature and the name
// slurmd registers for one of its ordinals.
func recordOwner(n *slinkyv1beta1.NodeSet, node slurm.Node) (podInfo, bool) {
	if node.Comment == "" {
		ordinal := ordinalOfSlurmNodeName(n, node.Name)
		if isDaemonSetMode(n) || ordinal < 0 || !slices.Contains(node.Features, slinky.SlurmNodeSetName(n)) {
			return podInfo{}, false
		}
		return podInfo{Namespace: n.Namespace, PodName: PodName(n, ordinal), NodeSetName: n.Name, NodeSetUID: string(n.UID)}, true
	}
	var info podInfo
	if err := json.Unmarshal([]byte(node.Comment), &info); err != nil {
		return podInfo{}, false
	}
	if info.Namespace != n.Namespace || info.PodName == "" || info.NodeSetName != n.Name ||
		info.NodeSetUID == "" || info.NodeSetUID != string(n.UID) {
		return podInfo{}, false
	}
	return info, true
}

// ordinalOfSlurmNodeName is the ordinal whose pod's slurmd registers as
// name in StatefulSet mode (the template's hostname prefix and the padded
// ordinal, or the pod's name), or -1.
func ordinalOfSlurmNodeName(n *slinkyv1beta1.NodeSet, name string) int {
	prefix := n.Spec.Template.Spec.Hostname
	if prefix == "" {
		prefix = n.Name + "-"
	}
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return -1
	}
	ordinal, err := strconv.Atoi(digits)
	if err != nil || paddedOrdinal(n, ordinal) != digits {
		return -1
	}
	return ordinal
}

// defunctCandidates are the DaemonSet-mode records that may be defunct:
// DOWN and NOT_RESPONDING (Slinky's rule).
func defunctCandidates(n *slinkyv1beta1.NodeSet, view *slurmView) []defunctNode {
	return recordsOfNodeSet(n, view, func(node slurm.Node, _ podInfo) bool {
		return node.HasState(slurm.NodeStateDown) && node.HasState(slurm.NodeStateNotResponding)
	})
}

// scaledInCandidates are the StatefulSet-mode records of ordinals no pod
// holds while the NodeSet runs all the pods it wants (live of them), i.e.
// that no pod is about to take: a scale-in removed them (its victims are
// chosen by cost, not from the top). A later scale-out takes the lowest
// free ordinals again, and their pods register afresh. Only records out of
// service by Gantry's hand (the preStop's DRAIN and DOWN, a scale-in
// drain) or because slurmd stopped answering: an administrator's reason
// keeps the record.
func scaledInCandidates(n *slinkyv1beta1.NodeSet, view *slurmView, live int) []defunctNode {
	if live < int(desiredReplicas(n)) {
		return nil // a pod is about to be made, perhaps at one of these ordinals
	}
	return recordsOfNodeSet(n, view, func(node slurm.Node, info podInfo) bool {
		if parent, ordinal := parentAndOrdinal(info.PodName); parent != n.Name || ordinal < 0 {
			return false
		}
		ours := node.Reason != "" && strings.HasPrefix(node.Reason, reasonPrefix)
		return (node.IsDown() || node.IsDrain()) && (ours || isUnresponsive(node))
	})
}

// retiredCandidates are the DaemonSet-mode records of pods whose
// Kubernetes node is gone, no longer admits the NodeSet, or now gives its
// pod another Slurm node name, out of service by Gantry's hand or because
// slurmd stopped answering. An administrator's reason keeps the record.
func retiredCandidates(n *slinkyv1beta1.NodeSet, view *slurmView, plan *daemonPlan) []defunctNode {
	return recordsOfNodeSet(n, view, func(node slurm.Node, info podInfo) bool {
		if info.Node == "" || plan.serves[info.Node] == node.Name {
			return false
		}
		ours := node.Reason != "" && strings.HasPrefix(node.Reason, reasonPrefix)
		return (node.IsDown() || node.IsDrain()) && (ours || isUnresponsive(node))
	})
}

// recordSweep is one kind of record Gantry deletes: which, the check that
// its pod (and Kubernetes node) are gone, and the event that says so.
type recordSweep struct {
	candidates []defunctNode
	gone       func(context.Context, defunctNode) (bool, error)
	reason     string
	note       string
}

// syncSlurmNodeRecords deletes the Slurm node records no pod will register
// onto again (slurmd's preStop keeps records, so that a replaced pod finds
// its own): in StatefulSet mode those of ordinals a scale-in removed, once
// the NodeSet runs all the pods it wants, in
// DaemonSet mode those of Kubernetes nodes that no longer run the NodeSet
// under that name, once the pod is gone. Under pruneSlurmNodeRecords:
// NodeNotFound, in DaemonSet mode (Slinky's rule), also the DOWN and
// NOT_RESPONDING records whose pod is gone and whose Kubernetes node is
// gone or now gives its pod another hostname. With Slurm unreadable
// nothing is deleted. Pods and Nodes are read from the API server: a cache
// that has not seen them yet must not cost a record.
func (r *Reconciler) syncSlurmNodeRecords(ctx context.Context, s *scope) error {
	n := s.Object
	if !s.slurm.reachable() {
		return nil
	}
	var sweeps []recordSweep
	// Slinky's pruning first, so that what it would delete is reported
	// under its reason.
	if isDaemonSetMode(n) && n.Spec.PruneSlurmNodeRecords == slinkyv1beta1.NodeSetPruneNodeRecordTypeNodeNotFound {
		sweeps = append(sweeps, recordSweep{candidates: defunctCandidates(n, s.slurm),
			gone:   func(ctx context.Context, d defunctNode) (bool, error) { return r.isDefunct(ctx, n, d) },
			reason: ReasonDefunctSlurmNodePruned,
			note:   "Deleted defunct Slurm node(s) %s: the pod is gone and the Kubernetes node is gone or no longer maps to the Slurm node"})
	}
	switch {
	case !isDaemonSetMode(n):
		stateful, _ := splitDaemonPods(s.pods)
		sweeps = append(sweeps, recordSweep{candidates: scaledInCandidates(n, s.slurm, len(livePods(stateful))), gone: r.podGone,
			reason: ReasonSlurmNodeDeleted, note: "Deleted the Slurm node(s) of scaled-in Pod(s) %s"})
	case s.daemon != nil:
		sweeps = append(sweeps, recordSweep{candidates: retiredCandidates(n, s.slurm, s.daemon), gone: r.podGone,
			reason: ReasonSlurmNodeDeleted, note: "Deleted the Slurm node(s) of Pod(s) whose Kubernetes node no longer runs the NodeSet under that name: %s"})
	}
	var errs []error
	for _, sweep := range sweeps {
		var deleted []string
		for _, d := range sweep.candidates {
			if _, listed := s.slurm.node(d.name); !listed {
				continue // deleted by an earlier sweep
			}
			gone, err := sweep.gone(ctx, d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !gone {
				continue
			}
			if err := s.slurm.client.DeleteNode(ctx, d.name); err != nil && !slurm.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting Slurm node %s (pod %s, Kubernetes node %s): %w", d.name, d.pod.PodName, d.pod.Node, err))
				continue
			}
			s.slurm.forget(d.name)
			deleted = append(deleted, fmt.Sprintf("%s (pod %s, Kubernetes node %s)", d.name, d.pod.PodName, d.pod.Node))
		}
		if len(deleted) > 0 {
			s.Events.Add(sweep.reason, sweep.note, joinCapped(deleted, 10))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("pruning Slurm node records: %w", errors.Join(errs...))
	}
	return nil
}

// podGone reports whether the record's pod no longer exists.
func (r *Reconciler) podGone(ctx context.Context, d defunctNode) (bool, error) {
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: d.pod.Namespace, Name: d.pod.PodName}, &corev1.Pod{})
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err):
		return true, nil
	default:
		return false, err
	}
}

// isDefunct reports whether d's pod is gone and its Kubernetes node is gone
// or gives a new pod another Slurm node name. A record whose comment names
// no Kubernetes node is kept, as Slinky keeps it.
func (r *Reconciler) isDefunct(ctx context.Context, n *slinkyv1beta1.NodeSet, d defunctNode) (bool, error) {
	if gone, err := r.podGone(ctx, d); err != nil || !gone {
		return false, err
	}
	if d.pod.Node == "" {
		return false, nil
	}
	node := &corev1.Node{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: d.pod.Node}, node)
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
