package nodeset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// syncReplicas brings the number of pods to spec.replicas: scale out at
// the lowest free ordinals, scale in by draining then deleting the pods
// whose loss costs least, or, at the right count, repair the pods.
func (r *Reconciler) syncReplicas(ctx context.Context, s *scope) error {
	n, pods := s.Object, s.pods
	if isDaemonSetMode(n) {
		return r.syncDaemonPods(ctx, n, s)
	}
	pods, daemonPods := splitDaemonPods(pods)
	if len(daemonPods) > 0 {
		// Left from DaemonSet mode: drained, then deleted, as Slinky does
		// when the scaling mode changes.
		if err := r.condemnAll(ctx, s, capPods(daemonPods), cordonedForScaleIn); err != nil {
			return err
		}
	}
	want := int(desiredReplicas(n))
	switch diff := len(pods) - want; {
	case diff < 0:
		return r.scaleOut(ctx, n, s, pods, -diff)
	case diff > 0:
		// Ranked afresh every pass, as Slinky does: a pod drained earlier
		// whose job runs on goes back to service when another pod becomes
		// cheaper to lose, unless the rollout wants it.
		victims, keep := chooseVictims(pods, diff)
		s.scalingIn, s.scaleInKeep = true, keep
		rollout := r.rolloutVictims(n, s, keep)
		keep = slices.DeleteFunc(livePods(keep), func(p *corev1.Pod) bool { return slices.Contains(rollout, p) })
		return errors.Join(
			r.condemnAll(ctx, s, capPods(victims), cordonedForScaleIn),
			r.uncordonAll(ctx, s, keep))
	default:
		return r.steadyState(ctx, n, s, pods)
	}
}

// scaleOut creates count pods at the lowest ordinals no pod (not even a
// terminating one) holds, since names must be free to be reused.
func (r *Reconciler) scaleOut(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope, pods []*corev1.Pod, count int) error {
	controller, err := r.getController(ctx, s)
	if err != nil {
		return err
	}
	count = min(count, burstReplicas)
	used := map[int]bool{}
	for _, p := range pods {
		used[ordinalOf(p)] = true
	}
	in := PodInputs{Controller: controller, RevisionHash: s.revisions.hash(), Images: r.Images, Ssh: s.ssh.hashes}
	toCreate := make([]*corev1.Pod, 0, count)
	var waiting []string
	for ordinal := 0; len(toCreate)+len(waiting) < count; ordinal++ {
		if used[ordinal] {
			continue
		}
		pod := BuildPod(n, ordinal, in)
		if wait := backoffWait(r.backoff, client.ObjectKeyFromObject(pod).String()); wait > 0 {
			waiting = append(waiting, pod.Name)
			s.Requeue.After(wait)
			continue
		}
		toCreate = append(toCreate, pod)
	}
	if len(waiting) > 0 {
		s.Events.Add(ReasonBackOff, "Waiting to recreate failed Pods %s (back-off)", strings.Join(waiting, ", "))
	}

	// Creates that failed or never ran are given back: the informer will
	// not see them.
	created, err := r.expectations.CreateBatch(s.key, expectationGroup, len(toCreate), func(i int) error {
		adopted, err := r.createPod(ctx, n, toCreate[i])
		switch {
		case adopted:
			// Taken over, not created.
			s.noteAdopted(toCreate[i])
		case err == nil:
			s.noteCreated(toCreate[i])
		}
		return err
	})
	if err != nil {
		r.Recorder.Warning(n, "FailedCreate", "Created %d of %d Pods: %v", created, len(toCreate), err)
	}
	return err
}

// createPod creates the pod's claims, then the pod: a pod whose claim is
// missing would stay Pending on an unbound volume. It reports whether,
// instead, it adopted a pod of that name that another operator made.
func (r *Reconciler) createPod(ctx context.Context, n *slinkyv1beta1.NodeSet, pod *corev1.Pod) (adopted bool, err error) {
	for _, claim := range podClaims(n, pod) {
		if n.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == slinkyv1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
			claim.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK)}
		}
		if err := r.Client.Create(ctx, claim); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating PersistentVolumeClaim %s: %w", claim.Name, err)
		}
	}
	err = r.Client.Create(ctx, pod)
	switch {
	case err == nil:
		return false, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return false, nil
	case apierrors.IsAlreadyExists(err):
		if adopted, aerr := r.adoptPod(ctx, n, pod); aerr != nil || adopted {
			return adopted, aerr
		}
		// The cache lagged behind a pod that exists; it is not ours to count.
		return false, fmt.Errorf("creating Pod %s: %w", pod.Name, err)
	default:
		return false, fmt.Errorf("creating Pod %s: %w", pod.Name, err)
	}
}

// adoptPod takes over a running pod of this NodeSet that the cache cannot
// see because the upstream operator made it (it has no managed-by label):
// the pod keeps running and gets Gantry's labels, the current revision's
// hash included, so it counts as up to date and is replaced only by a later
// change of the NodeSet. A pod controlled by anything else is not touched.
func (r *Reconciler) adoptPod(ctx context.Context, n *slinkyv1beta1.NodeSet, desired *corev1.Pod) (bool, error) {
	live := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if ref := metav1.GetControllerOfNoCopy(live); ref == nil || ref.UID != n.UID || isTerminating(live) {
		return false, nil
	}
	if live.Labels[builder.LabelManagedBy] == builder.ManagedByGantry {
		// Ours already: the cache is behind.
		return false, nil
	}
	patch := client.MergeFrom(live.DeepCopy())
	live.Labels = builder.MergeLabels(live.Labels, desired.Labels)
	if err := r.Client.Patch(ctx, live, patch); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}

// steadyState runs at the desired count: pods Gantry cordoned that are no
// longer to be deleted are returned to service, pods that finished (Failed
// or Succeeded) are deleted so they are recreated, others are repaired.
func (r *Reconciler) steadyState(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope, pods []*corev1.Pod) error {
	victims := r.rolloutVictims(n, s, pods)
	var errs []error
	keep := slices.DeleteFunc(livePods(pods), func(p *corev1.Pod) bool { return slices.Contains(victims, p) })
	errs = append(errs, r.uncordonAll(ctx, s, keep))
	errs = append(errs, forEachWorker(s.workers.ofAll(livePods(pods)), func(w *worker) error {
		pod := w.pod
		if isTerminal(pod) {
			// No slurmd runs in a finished pod, so nothing can be killed.
			// A failed one comes back only after its back-off.
			if pod.Status.Phase == corev1.PodFailed {
				podFailed(r.backoff, client.ObjectKeyFromObject(pod).String())
			}
			return r.deletePod(ctx, s, w, whyExited)
		}
		if !isCondemned(pod) {
			if err := r.syncClaimOwners(ctx, n, pod); err != nil {
				return err
			}
		}
		return r.repairIdentity(ctx, n, w)
	}))
	return errors.Join(errs...)
}

func isRollingUpdate(n *slinkyv1beta1.NodeSet) bool {
	return n.Spec.UpdateStrategy.Type != slinkyv1beta1.OnDeleteNodeSetStrategyType
}

// rolloutVictims are the healthy old pods among pods the rolling update
// replaces now (none with OnDelete).
func (r *Reconciler) rolloutVictims(n *slinkyv1beta1.NodeSet, s *scope, pods []*corev1.Pod) []*corev1.Pod {
	if !isRollingUpdate(n) {
		return nil
	}
	return rollingUpdateVictims(n, pods, s.revisions.hash(), r.clock.Now())
}

// uncordonAll returns to service the pods Gantry condemned that are no
// longer to go.
func (r *Reconciler) uncordonAll(ctx context.Context, s *scope, pods []*corev1.Pod) error {
	return forEachWorker(s.workers.ofAll(pods), func(w *worker) error {
		if !isCondemned(w.pod) {
			return nil
		}
		return r.uncordon(ctx, s, w)
	})
}

// syncRollout replaces pods of older revisions: unhealthy ones at once
// (they serve nothing), healthy ones at most maxUnavailable at a time, each
// drained before it is deleted. With OnDelete, pods are replaced only when
// someone deletes them. It goes on during a scale-in or scale-out, as
// Slinky's does, over the pods the scale-in keeps: a scale-in waiting for
// a long job does not hold the update back, and the pods it drains are
// not taken twice.
func (r *Reconciler) syncRollout(ctx context.Context, s *scope) error {
	n, pods := s.Object, s.pods
	if isDaemonSetMode(n) {
		return r.syncDaemonRollout(ctx, n, s)
	}
	pods, _ = splitDaemonPods(pods)
	if !isRollingUpdate(n) || n.DeletionTimestamp != nil {
		return nil
	}
	if s.scalingIn {
		// A scale-in: only the pods it keeps, as the Replicas step ranked
		// them.
		pods = s.scaleInKeep
	}
	_, old := splitByRevision(pods, s.revisions.hash())
	unhealthy, _ := splitUnhealthy(old)
	return r.condemnAll(ctx, s, append(unhealthy, r.rolloutVictims(n, s, pods)...), cordonedForUpdate)
}

// splitDaemonPods separates the pods made in DaemonSet mode.
func splitDaemonPods(pods []*corev1.Pod) (stateful, daemon []*corev1.Pod) {
	for _, p := range pods {
		if isDaemonPod(p) {
			daemon = append(daemon, p)
		} else {
			stateful = append(stateful, p)
		}
	}
	return stateful, daemon
}
