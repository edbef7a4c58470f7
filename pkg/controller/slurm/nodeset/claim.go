package nodeset

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
)

// claimPods returns the pods the NodeSet controls after adopting orphans
// that match its selector and name scheme and releasing pods it controls
// that no longer match.
func (r *Reconciler) claimPods(ctx context.Context, s *scope) ([]*corev1.Pod, error) {
	n := s.Object
	owned := &corev1.PodList{}
	if err := r.Client.List(ctx, owned, client.InNamespace(n.Namespace), client.MatchingFields{IndexPodOwner: string(n.UID)}); err != nil {
		return nil, err
	}
	// The candidates are the orphans the selector matches (IndexPodOwner),
	// read as the cache's own objects: only one about to be adopted is
	// copied.
	candidates := &corev1.PodList{}
	selector := slinky.NodeSetSelectorLabels(n)
	if err := r.Client.List(ctx, candidates, client.InNamespace(n.Namespace), client.MatchingFields{IndexPodOwner: OrphanPod},
		client.MatchingLabels(selector), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var pods, orphans []*corev1.Pod
	for i := range owned.Items {
		p := &owned.Items[i]
		if matchesSelector(p, selector) {
			pods = append(pods, p)
			continue
		}
		if err := r.releasePod(ctx, n, p); err != nil {
			return nil, err
		}
	}
	for i := range candidates.Items {
		p := &candidates.Items[i]
		if metav1.GetControllerOf(p) == nil && p.DeletionTimestamp == nil && namedAsPodOf(n, p) {
			orphans = append(orphans, p.DeepCopy())
		}
	}
	if len(orphans) == 0 || n.DeletionTimestamp != nil {
		return pods, nil
	}
	// Adopting on a stale view of a NodeSet that is being deleted would
	// hand pods to an owner about to vanish.
	fresh := &slinkyv1beta1.NodeSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(n), fresh); err != nil {
		return nil, err
	}
	if fresh.UID != n.UID || fresh.DeletionTimestamp != nil {
		return pods, nil
	}
	for _, p := range orphans {
		patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
		p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK))
		if err := r.Client.Patch(ctx, p, patch); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("adopting Pod %s: %w", p.Name, err)
		}
		pods = append(pods, p)
	}
	s.Events.Add(ReasonAdopted, "Adopted %d orphan Pod(s): %s", len(orphans), podNames(orphans))
	return pods, nil
}

// namedAsPodOf reports a pod named the way the NodeSet names its pods in
// its scaling mode: <nodeset>-<ordinal>, or in DaemonSet mode generated
// from <nodeset>-, as Slinky tells its orphans apart.
func namedAsPodOf(n *slinkyv1beta1.NodeSet, p *corev1.Pod) bool {
	if isDaemonSetMode(n) {
		return p.GenerateName == n.Name+"-"
	}
	parent, ordinal := parentAndOrdinal(p.Name)
	return parent == n.Name && ordinal >= 0
}

func (r *Reconciler) releasePod(ctx context.Context, n *slinkyv1beta1.NodeSet, p *corev1.Pod) error {
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	p.OwnerReferences = slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(ref metav1.OwnerReference) bool {
		return ref.UID == n.UID
	})
	if err := r.Client.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("releasing Pod %s: %w", p.Name, err)
	}
	return nil
}

func matchesSelector(p *corev1.Pod, selector map[string]string) bool {
	for k, v := range selector {
		if p.Labels[k] != v {
			return false
		}
	}
	return true
}
