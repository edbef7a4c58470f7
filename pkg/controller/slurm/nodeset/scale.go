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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/slowstart"
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
		if err := r.condemnAll(ctx, n, s, capPods(daemonPods), cordonedForScaleIn); err != nil {
			return err
		}
	}
	want := int(desiredReplicas(n))
	switch diff := len(pods) - want; {
	case diff < 0:
		return r.scaleOut(ctx, n, s, pods, -diff)
	case diff > 0:
		victims, _ := chooseVictims(pods, diff)
		return r.condemnAll(ctx, n, s, victims[:min(len(victims), burstReplicas)], cordonedForScaleIn)
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
		if wait := r.backoff.wait(client.ObjectKeyFromObject(pod).String(), r.clock.Now()); wait > 0 {
			waiting = append(waiting, pod.Name)
			s.Requeue.After(wait)
			continue
		}
		toCreate = append(toCreate, pod)
	}
	if len(waiting) > 0 {
		s.Events.Add(ReasonBackOff, "Waiting to recreate failed Pods %s (back-off)", strings.Join(waiting, ", "))
	}

	r.expectations.ExpectCreations(s.key, expectationGroup, len(toCreate))
	created, err := slowstart.SlowStartBatch(len(toCreate), 1, func(i int) error {
		adopted, err := r.createPod(ctx, n, toCreate[i])
		if adopted {
			s.tally.add(&s.tally.adopted, toCreate[i])
		}
		return err
	})
	// Creates that failed or never ran will not be seen by the informer.
	if skipped := len(toCreate) - created; skipped > 0 {
		r.expectations.CancelCreations(s.key, expectationGroup, skipped)
	}
	// An adopted pod was taken over, not created.
	s.tally.created += created - len(s.tally.adopted)
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

// condemnAll drains and deletes pods, each once its Slurm node has no work.
func (r *Reconciler) condemnAll(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope, pods []*corev1.Pod, why string) error {
	return forEachPod(pods, func(pod *corev1.Pod) error { return r.condemn(ctx, n, s, pod, why) })
}

// condemn deletes the pod if its Slurm node runs nothing; otherwise it
// drains the node and, if work remains, cordons the pod (so no later step
// undrains it) and comes back later. The node is read again right before
// any delete: the list predates the drain and anything an administrator
// or a job did since.
func (r *Reconciler) condemn(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope, pod *corev1.Pod, why string) error {
	if isTerminating(pod) {
		return nil
	}
	reason := fmt.Sprintf("Pod (%s/%s) is pending termination for %s", pod.Namespace, pod.Name, why)
	if why == cordonedForNodeMismatch {
		reason = fmt.Sprintf("Pod (%s/%s) is pending termination: its Kubernetes node %s is gone or no longer matches the NodeSet",
			pod.Namespace, pod.Name, targetNode(pod))
	}
	work := s.slurm.work(pod)
	// A no-op for a node Slurm does not list or that already drains.
	if err := s.slurm.drain(ctx, pod, reason); err != nil {
		return err
	}
	switch work {
	case workNone, workPossible:
		if err := s.slurm.refresh(ctx, pod); err != nil {
			return err
		}
		if !s.slurm.mayRunJobs(pod) {
			return r.deletePod(ctx, n, s, pod, why)
		}
	default:
		// Kept whatever a re-read says; mayRunJobs records why.
		s.slurm.mayRunJobs(pod)
	}
	if !isPodCordoned(pod) {
		s.tally.add(&s.tally.draining, pod)
	}
	if err := r.cordonPod(ctx, pod, why); err != nil {
		return err
	}
	s.Requeue.After(drainPollInterval)
	return nil
}

// deletePod deletes one pod, expecting its deletion before it is sent.
func (r *Reconciler) deletePod(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope, pod *corev1.Pod, why string) error {
	if why == cordonedForScaleIn || why == cordonedForNodeMismatch {
		if err := r.releaseClaimsOnScaleIn(ctx, n, pod); err != nil {
			return err
		}
	}
	r.expectations.ExpectDeletions(s.key, expectationGroup, pod.UID)
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		r.expectations.DeletionObserved(s.key, expectationGroup, pod.UID)
		return nil
	default:
		r.expectations.CancelDeletions(s.key, expectationGroup, pod.UID)
		return fmt.Errorf("deleting Pod %s: %w", pod.Name, err)
	}
	if why == cordonedForScaleIn || why == cordonedForUpdate || why == cordonedForNodeMismatch {
		r.observeDrainWait(s, pod)
	}
	switch why {
	case cordonedForScaleIn:
		s.tally.add(&s.tally.deletedScaleIn, pod)
	case cordonedForUpdate:
		s.tally.add(&s.tally.deletedUpdate, pod)
	case cordonedForNodeMismatch:
		s.tally.add(&s.tally.deletedNodeMismatch, pod)
	case whyUnregistered:
		s.tally.add(&s.tally.deletedUnregistered, pod)
	default:
		s.tally.add(&s.tally.deletedFinished, pod)
	}
	return nil
}

// observeDrainWait records how long the deleted pod's Slurm node drained:
// from when Slurm last set its reason (Gantry's drain) until now.
func (r *Reconciler) observeDrainWait(s *scope, pod *corev1.Pod) {
	node, ok := s.slurm.node(SlurmNodeName(pod))
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
	for _, t := range n.Spec.VolumeClaimTemplates {
		claim := &corev1.PersistentVolumeClaim{}
		key := types.NamespacedName{Namespace: n.Namespace, Name: claimName(n, t.Name, claimSuffix(n, pod))}
		if err := r.Client.Get(ctx, key, claim); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if slices.ContainsFunc(claim.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == pod.UID }) {
			continue
		}
		patch := client.MergeFrom(claim.DeepCopy())
		// The pod becomes the only controller: a claim may have one.
		claim.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))}
		if err := r.Client.Patch(ctx, claim, patch); err != nil {
			return fmt.Errorf("handing PersistentVolumeClaim %s to Pod %s: %w", claim.Name, pod.Name, err)
		}
	}
	return nil
}

// steadyState runs at the desired count: pods Gantry cordoned that are no
// longer to be deleted are returned to service, pods that finished (Failed
// or Succeeded) are deleted so they are recreated, others are repaired.
func (r *Reconciler) steadyState(ctx context.Context, n *slinkyv1beta1.NodeSet, s *scope, pods []*corev1.Pod) error {
	var victims []*corev1.Pod
	if isRollingUpdate(n) {
		victims = rollingUpdateVictims(n, pods, s.revisions.hash(), r.clock.Now())
	}
	var errs []error
	keep := slices.DeleteFunc(livePods(pods), func(p *corev1.Pod) bool { return slices.Contains(victims, p) })
	errs = append(errs, forEachPod(keep, func(pod *corev1.Pod) error {
		if !isCondemned(pod) {
			return nil
		}
		return r.uncordon(ctx, s, pod)
	}))
	errs = append(errs, forEachPod(livePods(pods), func(pod *corev1.Pod) error {
		if isTerminal(pod) {
			// No slurmd runs in a finished pod, so nothing can be killed.
			// A failed one comes back only after its back-off.
			if pod.Status.Phase == corev1.PodFailed {
				r.backoff.failed(client.ObjectKeyFromObject(pod).String(), r.clock.Now())
			}
			return r.deletePod(ctx, n, s, pod, "")
		}
		if identityMatches(n, pod) {
			return nil
		}
		return r.patchPod(ctx, pod, func(p *corev1.Pod) { setIdentity(n, p) })
	}))
	return errors.Join(errs...)
}

func isRollingUpdate(n *slinkyv1beta1.NodeSet) bool {
	return n.Spec.UpdateStrategy.Type != slinkyv1beta1.OnDeleteNodeSetStrategyType
}

// syncRollout replaces pods of older revisions: unhealthy ones at once
// (they serve nothing), healthy ones at most maxUnavailable at a time, each
// drained before it is deleted. With OnDelete, pods are replaced only when
// someone deletes them.
func (r *Reconciler) syncRollout(ctx context.Context, s *scope) error {
	n, pods := s.Object, s.pods
	if isDaemonSetMode(n) {
		return r.syncDaemonRollout(ctx, n, s)
	}
	pods, _ = splitDaemonPods(pods)
	if !isRollingUpdate(n) || n.DeletionTimestamp != nil || len(pods) != int(desiredReplicas(n)) {
		return nil
	}
	_, old := splitByRevision(pods, s.revisions.hash())
	unhealthy, _ := splitUnhealthy(old)
	victims := rollingUpdateVictims(n, pods, s.revisions.hash(), r.clock.Now())
	return r.condemnAll(ctx, n, s, append(unhealthy, victims...), cordonedForUpdate)
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
