package nodeset

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// syncCordon carries cordons into Slurm: a cordoned Kubernetes Node cordons
// the pods on it, a cordoned pod drains its Slurm node, an uncordoned pod
// is undrained. Nodes an administrator drained or that slurmctld marked as
// not responding keep their state.
func (r *Reconciler) syncCordon(ctx context.Context, s *scope) error {
	return forEachWorker(s.workers.live(), func(w *worker) error {
		pod := w.pod
		kubeNode, err := r.kubeNode(ctx, pod)
		if err != nil {
			return err
		}
		n, listed := s.slurm.node(w.slurmNode)
		if listed && (!isReasonOurs(n) || isUnresponsive(n)) {
			return nil
		}
		if why := slinkysCordon(pod, n); listed && why != "" {
			// Slinky's own cordon from before the move: Gantry's from now on,
			// so it is lifted when Slinky would lift it.
			if err := r.patchPod(ctx, pod, func(p *corev1.Pod) { setAnnotation(p, AnnotationCordonedBy, why) }); err != nil {
				return err
			}
		}
		switch {
		case kubeNode != nil && kubeNode.Spec.Unschedulable:
			reason := nodeCordonedReason(kubeNode, pod)
			if v, ok := kubeNode.Annotations[slinkyv1beta1.AnnotationNodeCordonReason]; ok && sanitizeReason(v) != "" {
				reason = sanitizeReason(v)
			} else if v := r.conditionsReason(kubeNode); v != "" {
				reason = v
			}
			if !isPodCordoned(pod) {
				s.noteCordonedForNode(pod)
			}
			if err := r.cordonPod(ctx, pod, cordonedForNode); err != nil {
				return err
			}
			return s.slurm.drain(ctx, w.slurmNode, reason)
		case isPodCordoned(pod) && pod.Annotations[AnnotationCordonedBy] == cordonedForNode:
			// The Node was uncordoned: lift the cordon it caused.
			return r.uncordon(ctx, s, w)
		case isPodCordoned(pod):
			return s.slurm.drain(ctx, w.slurmNode, podCordonedReason(pod))
		default:
			return s.slurm.undrain(ctx, w)
		}
	})
}

// conditionsReason is "(<reason>: <message>)" for each of the Node's
// conditions that --propagated-node-conditions lists and that is True, in
// the flag's order, joined by "; " (Slinky's wording); empty when none is.
func (r *Reconciler) conditionsReason(node *corev1.Node) string {
	var parts []string
	for _, t := range r.propagatedNodeConditions {
		for _, c := range node.Status.Conditions {
			if string(c.Type) == t && c.Status == corev1.ConditionTrue {
				parts = append(parts, fmt.Sprintf("(%s: %s)", c.Reason, c.Message))
			}
		}
	}
	return sanitizeReason(strings.Join(parts, "; "))
}

// kubeNode is the Kubernetes Node the pod runs on; nil when unscheduled or
// gone. It is the cache's own object, not a copy (it is read twice per pod
// per reconcile): callers only read it.
func (r *Reconciler) kubeNode(ctx context.Context, pod *corev1.Pod) (*corev1.Node, error) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return node, nil
}

// slinkysCordon tells, for a pod cordoned by someone other than Gantry,
// whether the Slinky operator cordoned it before the move to Gantry, and
// why: its Slurm node's reason is the one Slinky sets for a cordoned Node
// or a scale-in (Gantry sets the same texts, with AnnotationCordonedBy).
// A person's cordon, and any other reason, is not Slinky's to lift.
func slinkysCordon(pod *corev1.Pod, n slurm.Node) string {
	if !isPodCordoned(pod) || pod.Annotations[AnnotationCordonedBy] != "" || !n.IsDrain() {
		return ""
	}
	switch n.Reason {
	case reasonPrefix + nodeCordonedReason(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}, pod):
		return cordonedForNode
	case reasonPrefix + condemnReason(pod, cordonedForScaleIn):
		return cordonedForScaleIn
	}
	return ""
}
