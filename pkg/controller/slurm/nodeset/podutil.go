package nodeset

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/slowstart"
)

// Helpers for the pods of one reconcile: patching them in place, and
// running a step over their workers in slow-start batches.

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

// repairIdentity puts back the worker's identity labels if they were
// changed.
func (r *Reconciler) repairIdentity(ctx context.Context, n *slinkyv1beta1.NodeSet, w *worker) error {
	if identityMatches(n, w) {
		return nil
	}
	return r.patchPod(ctx, w.pod, func(p *corev1.Pod) { setIdentity(n, p, w.slurmNode) })
}

// forEachWorker runs fn over workers in slow-start batches.
func forEachWorker(ws []*worker, fn func(*worker) error) error {
	_, err := slowstart.SlowStartBatch(len(ws), 1, func(i int) error { return fn(ws[i]) })
	return err
}
