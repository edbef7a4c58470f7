package nodeset

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/slowstart"
)

// AnnotationCordonedBy records why Gantry cordoned a pod, so that Gantry
// only ever lifts its own cordons: a pod-cordon set by a person stays until
// that person removes it.
const AnnotationCordonedBy = "gantry.dev/nodeset-cordoned-by"

// Values of AnnotationCordonedBy.
const (
	cordonedForNode    = "node"
	cordonedForScaleIn = "scale-in"
	cordonedForUpdate  = "update"
	// cordonedForNodeMismatch: DaemonSet mode, the pod's Kubernetes node is
	// gone or no longer matches the NodeSet.
	cordonedForNodeMismatch = "node-mismatch"
)

// isCondemned reports a pod Gantry cordoned to delete it.
func isCondemned(pod *corev1.Pod) bool {
	v := pod.Annotations[AnnotationCordonedBy]
	return isPodCordoned(pod) && (v == cordonedForScaleIn || v == cordonedForUpdate || v == cordonedForNodeMismatch)
}

// patchPod applies mutate to a copy of pod and sends a merge patch only when
// the labels or annotations changed; the caller's pod is updated in place
// so later steps see the change. A pod that is gone is not an error.
func (r *Reconciler) patchPod(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.Pod)) error {
	next := pod.DeepCopy()
	mutate(next)
	if maps.Equal(next.Labels, pod.Labels) && maps.Equal(next.Annotations, pod.Annotations) {
		return nil
	}
	if err := r.Client.Patch(ctx, next, client.MergeFrom(pod)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching Pod %s: %w", pod.Name, err)
	}
	*pod = *next
	return nil
}

func setAnnotation(pod *corev1.Pod, key, value string) {
	if value == "" {
		delete(pod.Annotations, key)
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = value
}

func livePods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if !isTerminating(p) {
			out = append(out, p)
		}
	}
	return out
}

// forEachPod runs fn over pods in slow-start batches.
func forEachPod(pods []*corev1.Pod, fn func(*corev1.Pod) error) error {
	_, err := slowstart.SlowStartBatch(len(pods), 1, func(i int) error { return fn(pods[i]) })
	return err
}

// syncDeadlines sets each pod's pod-deadline annotation to the latest end
// of the jobs running on its Slurm node, and removes it when none runs.
func (r *Reconciler) syncDeadlines(ctx context.Context, s *scope) error {
	if !s.slurm.reachable() {
		return nil
	}
	return forEachPod(livePods(s.pods), func(pod *corev1.Pod) error {
		want := ""
		if d := s.slurm.deadline(SlurmNodeName(pod)); !d.IsZero() {
			want = d.UTC().Format(time.RFC3339)
		}
		return r.patchPod(ctx, pod, func(p *corev1.Pod) { setAnnotation(p, slinkyv1beta1.AnnotationPodDeadline, want) })
	})
}

// syncProtection labels pods whose Slurm node a job holds (running or
// suspended), or may hold where Slurm cannot show it (a Ready pod whose
// node it does not list), which puts them under the worker
// PodDisruptionBudget. With Slurm unreachable the labels
// stay as they are: dropping protection because nothing is known would
// expose running jobs to evictions.
func (r *Reconciler) syncProtection(ctx context.Context, s *scope) error {
	n, pods := s.Object, s.pods
	if s.slurm.configured() && !s.slurm.reachable() {
		return nil
	}
	enabled := n.Spec.WorkloadDisruptionProtectionEnabled()
	return forEachPod(livePods(pods), func(pod *corev1.Pod) error {
		protect := enabled && s.slurm.protects(pod)
		return r.patchPod(ctx, pod, func(p *corev1.Pod) {
			if protect {
				p.Labels[slinkyv1beta1.LabelNodeSetPodProtect] = "true"
			} else {
				delete(p.Labels, slinkyv1beta1.LabelNodeSetPodProtect)
			}
		})
	})
}

// syncCordon carries cordons into Slurm: a cordoned Kubernetes Node cordons
// the pods on it, a cordoned pod drains its Slurm node, an uncordoned pod
// is undrained. Nodes an administrator drained or that slurmctld marked as
// not responding keep their state.
func (r *Reconciler) syncCordon(ctx context.Context, s *scope) error {
	return forEachPod(livePods(s.pods), func(pod *corev1.Pod) error {
		kubeNode, err := r.kubeNode(ctx, pod)
		if err != nil {
			return err
		}
		if n, ok := s.slurm.node(SlurmNodeName(pod)); ok && (!isReasonOurs(n) || isUnresponsive(n)) {
			return nil
		}
		podRef := pod.Namespace + "/" + pod.Name
		switch {
		case kubeNode != nil && kubeNode.Spec.Unschedulable:
			reason := fmt.Sprintf("Node (%s) was cordoned, Pod (%s) must be cordoned", kubeNode.Name, podRef)
			if v, ok := kubeNode.Annotations[slinkyv1beta1.AnnotationNodeCordonReason]; ok && sanitizeReason(v) != "" {
				reason = sanitizeReason(v)
			} else if v := r.conditionsReason(kubeNode); v != "" {
				reason = v
			}
			if !isPodCordoned(pod) {
				s.tally.add(&s.tally.cordonedForNode, pod)
			}
			if err := r.cordonPod(ctx, pod, cordonedForNode); err != nil {
				return err
			}
			return s.slurm.drain(ctx, pod, reason)
		case isPodCordoned(pod) && pod.Annotations[AnnotationCordonedBy] == cordonedForNode:
			// The Node was uncordoned: lift the cordon it caused.
			return r.uncordon(ctx, s, pod)
		case isPodCordoned(pod):
			return s.slurm.drain(ctx, pod, fmt.Sprintf("Pod (%s) was cordoned", podRef))
		default:
			return s.slurm.undrain(ctx, pod)
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

// cordonPod sets pod-cordon, recording why unless someone else already
// cordoned the pod (their cordon must outlive Gantry's reason).
func (r *Reconciler) cordonPod(ctx context.Context, pod *corev1.Pod, why string) error {
	if isPodCordoned(pod) {
		return nil
	}
	return r.patchPod(ctx, pod, func(p *corev1.Pod) {
		setAnnotation(p, slinkyv1beta1.AnnotationPodCordon, "true")
		setAnnotation(p, AnnotationCordonedBy, why)
	})
}

// uncordon lifts a cordon Gantry set and returns the Slurm node to service,
// unless the pod's Kubernetes Node is cordoned.
func (r *Reconciler) uncordon(ctx context.Context, s *scope, pod *corev1.Pod) error {
	if !isPodCordoned(pod) || pod.Annotations[AnnotationCordonedBy] == "" {
		return nil
	}
	if kubeNode, err := r.kubeNode(ctx, pod); err != nil {
		return err
	} else if kubeNode != nil && kubeNode.Spec.Unschedulable {
		return nil
	}
	if n, ok := s.slurm.node(SlurmNodeName(pod)); ok && !isReasonOurs(n) {
		return nil
	}
	if err := r.patchPod(ctx, pod, func(p *corev1.Pod) {
		setAnnotation(p, slinkyv1beta1.AnnotationPodCordon, "")
		setAnnotation(p, AnnotationCordonedBy, "")
	}); err != nil {
		return err
	}
	return s.slurm.undrain(ctx, pod)
}
