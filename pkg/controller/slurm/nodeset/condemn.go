package nodeset

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// The actions on a worker that leaves, or returns to, service: condemn
// (drain, then delete once mayDelete allows), delete, cordon and uncordon.
// The vocabulary and the decision they act on are deletion.go's.

// condemnAll drains and deletes pods, each once its Slurm node has no work.
func (r *Reconciler) condemnAll(ctx context.Context, s *scope, pods []*corev1.Pod, why string) error {
	return forEachWorker(s.workers.ofAll(pods), func(w *worker) error { return r.condemn(ctx, s, w, why) })
}

// condemn deletes the worker's pod if its Slurm node runs nothing;
// otherwise it drains the node and, if work remains, cordons the pod (so
// no later step undrains it) and comes back later. The node is read again
// right before any delete (mayDelete).
func (r *Reconciler) condemn(ctx context.Context, s *scope, w *worker, why string) error {
	pod := w.pod
	if isTerminating(pod) {
		return nil
	}
	listed := s.slurm.work(w)
	// A no-op for a node Slurm does not list or that already drains.
	if err := s.slurm.drain(ctx, w.slurmNode, condemnReason(pod, why)); err != nil {
		return err
	}
	ok, err := s.slurm.mayDelete(ctx, w, listed)
	if err != nil {
		return err
	}
	if ok {
		return r.deletePod(ctx, s, w, why)
	}
	if !isPodCordoned(pod) {
		s.noteDraining(pod)
	}
	if err := r.cordonPod(ctx, pod, why); err != nil {
		return err
	}
	s.Requeue.After(drainPollInterval)
	return nil
}

// deletePod deletes the worker's pod, its deletion expected before it is
// sent; a pod already gone is not an error, nor reported.
func (r *Reconciler) deletePod(ctx context.Context, s *scope, w *worker, why string) error {
	n, pod := s.Object, w.pod
	if why == cordonedForScaleIn || why == cordonedForNodeMismatch {
		if err := r.releaseClaimsOnScaleIn(ctx, n, pod); err != nil {
			return err
		}
	}
	gone := false
	if err := r.expectations.DeleteExpecting(s.key, expectationGroup, func() error {
		err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		gone = apierrors.IsNotFound(err)
		return err
	}, pod.UID); err != nil {
		return fmt.Errorf("deleting Pod %s: %w", pod.Name, err)
	}
	if gone {
		return nil
	}
	if why == cordonedForScaleIn || why == cordonedForUpdate || why == cordonedForNodeMismatch {
		r.observeDrainWait(s, w)
	}
	s.noteDeleted(why, pod)
	return nil
}

// observeDrainWait records how long the deleted pod's Slurm node drained:
// from when Slurm last set its reason (Gantry's drain) until now.
func (r *Reconciler) observeDrainWait(s *scope, w *worker) {
	node, ok := s.slurm.node(w.slurmNode)
	if !ok || !node.IsDrain() {
		return
	}
	if since, ok := node.ReasonChangedAt.Time(); ok {
		r.metrics.ObserveDrainWait(s.Object.Namespace, s.Object.Name, r.clock.Now().Sub(since))
	}
}

// releaseClaimsOnScaleIn hands the pod's claims to the pod when the
// retention policy deletes claims on scale-in, so they go with it.
func (r *Reconciler) releaseClaimsOnScaleIn(ctx context.Context, n *slinkyv1beta1.NodeSet, pod *corev1.Pod) error {
	if n.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != slinkyv1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
		return nil
	}
	return r.forEachClaim(ctx, n, pod, func(claim *corev1.PersistentVolumeClaim) error {
		if slices.ContainsFunc(claim.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == pod.UID }) {
			return nil
		}
		patch := client.MergeFrom(claim.DeepCopy())
		// The pod becomes the only controller: a claim may have one.
		claim.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))}
		if err := r.Client.Patch(ctx, claim, patch); err != nil {
			return fmt.Errorf("handing PersistentVolumeClaim %s to Pod %s: %w", claim.Name, pod.Name, err)
		}
		return nil
	})
}

// forEachClaim calls f with each of the pod's claims that exists, as the
// cache shows it.
func (r *Reconciler) forEachClaim(ctx context.Context, n *slinkyv1beta1.NodeSet, pod *corev1.Pod, f func(*corev1.PersistentVolumeClaim) error) error {
	for _, t := range n.Spec.VolumeClaimTemplates {
		claim := &corev1.PersistentVolumeClaim{}
		key := types.NamespacedName{Namespace: n.Namespace, Name: claimName(n, t.Name, claimSuffix(n, pod))}
		if err := r.Client.Get(ctx, key, claim); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if err := f(claim); err != nil {
			return err
		}
	}
	return nil
}

// syncClaimOwners brings the pod's claims in line with whenDeleted, as
// Slinky does on every pass: with Delete the NodeSet controls them (they go
// with it), with Retain it does not. A claim another object controls (a
// scaled-in pod, releaseClaimsOnScaleIn) or one being deleted is left as it
// is, and so are other owners.
func (r *Reconciler) syncClaimOwners(ctx context.Context, n *slinkyv1beta1.NodeSet, pod *corev1.Pod) error {
	want := n.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == slinkyv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
	return r.forEachClaim(ctx, n, pod, func(claim *corev1.PersistentVolumeClaim) error {
		if !claim.DeletionTimestamp.IsZero() {
			return nil
		}
		if ref := metav1.GetControllerOf(claim); ref != nil && ref.UID != n.UID {
			return nil
		}
		if metav1.IsControlledBy(claim, n) == want {
			return nil
		}
		patch := client.MergeFromWithOptions(claim.DeepCopy(), client.MergeFromWithOptimisticLock{})
		claim.OwnerReferences = slices.DeleteFunc(claim.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == n.UID })
		if want {
			claim.OwnerReferences = append(claim.OwnerReferences, *metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK))
		}
		if err := r.Client.Patch(ctx, claim, patch); err != nil {
			return fmt.Errorf("setting the owners of PersistentVolumeClaim %s (whenDeleted %s): %w", claim.Name,
				n.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted, err)
		}
		return nil
	})
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
// unless the pod's Kubernetes Node is cordoned or the node carries someone
// else's reason.
func (r *Reconciler) uncordon(ctx context.Context, s *scope, w *worker) error {
	pod := w.pod
	if !isPodCordoned(pod) || pod.Annotations[AnnotationCordonedBy] == "" {
		return nil
	}
	if kubeNode, err := r.kubeNode(ctx, pod); err != nil {
		return err
	} else if kubeNode != nil && kubeNode.Spec.Unschedulable {
		return nil
	}
	if n, ok := s.slurm.node(w.slurmNode); ok && !isReasonOurs(n) {
		return nil
	}
	if err := r.patchPod(ctx, pod, func(p *corev1.Pod) {
		setAnnotation(p, slinkyv1beta1.AnnotationPodCordon, "")
		setAnnotation(p, AnnotationCordonedBy, "")
	}); err != nil {
		return err
	}
	return s.slurm.undrain(ctx, w)
}
