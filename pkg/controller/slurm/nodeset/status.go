package nodeset

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
	"github.com/gantry-dev/gantry/pkg/framework/status"
)

// ConditionSlurmReachable says whether slurmrestd answered this
// NodeSet's last reconcile. It is absent while the Controller has no
// RestApi, since then Slurm is not consulted at all.
const ConditionSlurmReachable = "SlurmReachable"

// ConditionSlurmNodesFound is False while a Ready pod that should go
// (scale-in, rollout) is kept because Slurm does not list its node: slurmd
// registered under another name, or Slurm lost the node. Gantry cannot tell
// whether jobs run there, so it does not delete the pod. It is absent
// otherwise.
const ConditionSlurmNodesFound = "SlurmNodesFound"

// ReasonSlurmNodeNotFound is ConditionSlurmNodesFound's reason and the
// Warning event's.
const ReasonSlurmNodeNotFound = "SlurmNodeNotFound"

// Reasons of ConditionSlurmReachable.
const (
	ReasonSlurmReachable     = "SlurmRestApiReachable"
	ReasonSlurmRestApiFailed = "SlurmRestApiError"
	// ReasonSlurmRestApiGone: the Controller had a RestApi and has none.
	ReasonSlurmRestApiGone = "SlurmRestApiNotFound"
)

// replicaCounts are the pod counts of the status.
type replicaCounts struct {
	replicas, updated, ready, available int32
}

// countReplicas counts as Slinky (and a StatefulSet) does: replicas and
// readyReplicas include pods still terminating, updatedReplicas does not.
func countReplicas(n *slinkyv1beta1.NodeSet, ws []*worker, hash string, now time.Time) replicaCounts {
	var c replicaCounts
	for _, w := range ws {
		p := w.pod
		if p.Status.Phase == "" {
			// Not yet created as far as the API server has said.
			continue
		}
		c.replicas++
		if !isTerminating(p) && p.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] == hash {
			c.updated++
		}
		if p.Status.Phase == corev1.PodRunning && podcond.IsReady(p) {
			c.ready++
			if isAvailable(p, n.Spec.MinReadySeconds, now) {
				c.available++
			}
		}
	}
	return c
}

// computeStatus is the status the NodeSet should show given its workers;
// a pure function of its inputs so status.Update may re-run it after a
// conflict.
func computeStatus(n *slinkyv1beta1.NodeSet, ws []*worker, view *slurmView, rev revisionState, daemon *daemonPlan, now time.Time) slinkyv1beta1.NodeSetStatus {
	st := *n.Status.DeepCopy()
	c := countReplicas(n, ws, rev.hash(), now)
	st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas = c.replicas, c.updated, c.ready, c.available
	// Desired is spec.replicas, or in DaemonSet mode the nodes that should
	// run a pod (replicas is ignored there).
	// Unavailable: of the pods there (StatefulSet mode), or of the nodes
	// that should run one (DaemonSet mode), as Slinky counts.
	desired, unavailable := desiredReplicas(n), c.replicas-c.available
	if daemon != nil {
		desired = int32(daemon.desired)
		unavailable = desired - c.available
	}
	st.UnavailableReplicas = max(unavailable, 0)
	st.Desired = desired
	st.ObservedGeneration = n.Generation
	st.NodeSetHash = rev.hash()
	st.CollisionCount = &rev.collisionCount
	st.Selector = labels.SelectorFromSet(slinky.NodeSetSelectorLabels(n)).String()

	switch {
	case !view.configured():
		st.SlurmIdle, st.SlurmAllocated, st.SlurmDown, st.SlurmDrain = 0, 0, 0, 0
		meta.RemoveStatusCondition(&st.Conditions, ConditionSlurmReachable)
	case view.reachable():
		sc := view.counts(ws)
		st.SlurmIdle, st.SlurmAllocated, st.SlurmDown, st.SlurmDrain = sc.idle, sc.allocated, sc.down, sc.drain
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ConditionSlurmReachable, Status: metav1.ConditionTrue, Reason: ReasonSlurmReachable,
			Message: "slurmrestd answered", ObservedGeneration: n.Generation,
		})
	default:
		// The last known Slurm counts stay: zeros would claim every node vanished.
		reason := ReasonSlurmRestApiFailed
		if view.restApiGone {
			reason = ReasonSlurmRestApiGone
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ConditionSlurmReachable, Status: metav1.ConditionFalse, Reason: reason,
			Message:            "Slurm is unreachable; pods are still created, but none that may run jobs is deleted: " + view.err.Error(),
			ObservedGeneration: n.Generation,
		})
	}
	if unknown := view.unknownNodes(); len(unknown) > 0 {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ConditionSlurmNodesFound, Status: metav1.ConditionFalse, Reason: ReasonSlurmNodeNotFound,
			Message: "kept because Slurm does not list their node, so jobs may run there: " + joinCapped(unknown, 10) +
				"; check that slurmd registers under the pod's node name",
			ObservedGeneration: n.Generation,
		})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionSlurmNodesFound)
	}
	return st
}

// joinCapped joins at most limit items, noting how many were left out.
func joinCapped(items []string, limit int) string {
	if len(items) <= limit {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:limit], ", "), len(items)-limit)
}

// updateStatus writes the status when it changed, reports a new loss of
// contact with Slurm as an event, and asks to come back when a ready pod
// becomes available (minReadySeconds has no event of its own).
func (r *Reconciler) updateStatus(ctx context.Context, s *scope) error {
	n, ws := s.Object, s.workers.list
	now := r.clock.Now()
	wasReachable := !meta.IsStatusConditionFalse(n.Status.Conditions, ConditionSlurmReachable)
	wasNodeNotFound := meta.IsStatusConditionFalse(n.Status.Conditions, ConditionSlurmNodesFound)
	_, err := status.Update(ctx, r.Client, n, func(obj *slinkyv1beta1.NodeSet) error {
		obj.Status = computeStatus(obj, ws, s.slurm, s.revisions, s.daemon, now)
		return nil
	})
	if err == nil {
		c := s.slurm.podStates(ws)
		c.Desired, c.Ready = int(n.Status.Desired), int(n.Status.ReadyReplicas)
		r.metrics.SetNodeSetPods(n.Namespace, n.Name, c)
	}
	if wasReachable && s.slurm.configured() && !s.slurm.reachable() {
		r.Recorder.Warning(n, ReasonSlurmUnreachable, "Slurm is unreachable: %v", s.slurm.err)
	}
	if unknown := s.slurm.unknownNodes(); len(unknown) > 0 && !wasNodeNotFound {
		r.Recorder.Warning(n, ReasonSlurmNodeNotFound,
			"Not deleting %s: Slurm does not list the node, so jobs may run there", joinCapped(unknown, 10))
	}
	if n.Spec.MinReadySeconds > 0 && n.Status.ReadyReplicas != n.Status.AvailableReplicas {
		s.Requeue.After(time.Duration(n.Spec.MinReadySeconds)*time.Second + time.Second)
	}
	return err
}
