package nodeset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/pkg/framework/events"
)

// Event reasons. The pod ones are the ones Kubernetes' workload
// controllers (and Slinky, pod by pod) use; the others are Slinky's for the
// same happening, so alerts written for either keep working.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	// ReasonScalingUp: pods were created, in either scaling mode.
	ReasonScalingUp = "ScalingUp"
	// ReasonScalingDown: pods were deleted by a scale-in, or in DaemonSet
	// mode for any reason but a rolling update.
	ReasonScalingDown = "ScalingDown"
	// ReasonRollingUpdate: pods of an old revision were deleted.
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonNodeCordon: pods were cordoned because their Kubernetes Node is.
	ReasonNodeCordon = "NodeCordon"
	// ReasonSlurmNodeNotRegistered (Warning): healthy pods whose slurmd Slurm
	// does not list were deleted to be made again.
	ReasonSlurmNodeNotRegistered = "SlurmNodeNotRegistered"
	// ReasonFailedNodeSetPod (Warning): failed pods were deleted, StatefulSet
	// mode. Slinky declares this reason for it but records nothing.
	ReasonFailedNodeSetPod = "FailedNodeSetPod"
	// ReasonFailedDaemonPod (Warning) and ReasonSucceededDaemonPod: exited
	// pods were deleted, DaemonSet mode.
	ReasonFailedDaemonPod    = "FailedDaemonPod"
	ReasonSucceededDaemonPod = "SucceededDaemonPod"
	// ReasonHostnameMismatch: DaemonSet-mode pods were replaced because their
	// node's hostname-override changed.
	ReasonHostnameMismatch = "HostnameMismatch"
	ReasonDraining         = "Draining"
	ReasonSlurmUnreachable = "SlurmUnreachable"
	// ReasonAdopted: a pod another operator made (Slinky's) is now Gantry's.
	ReasonAdopted = "Adopted"
	// ReasonBackOff: failed pods wait before they are created again.
	ReasonBackOff = "BackOff"
)

// What one reconcile did to pods is reported as one message per kind of
// change ("Deleted 3 Pods to scale in: a, b, c"), not one per pod: every
// event is an API write. The steps note each pod by name in the scope
// (scope.noted) as they go, concurrently; Status hands the lists to the
// scope's events.Log (reportPods), which records them after the status
// write like every other change of the reconcile.

func (s *scope) note(list *[]string, pod *corev1.Pod) {
	s.noted.mu.Lock()
	defer s.noted.mu.Unlock()
	*list = append(*list, pod.Name)
}

// noteCreated notes a pod created at an ordinal (StatefulSet mode).
func (s *scope) noteCreated(pod *corev1.Pod) { s.note(&s.noted.created, pod) }

// noteCreatedOn notes a pod created for its Kubernetes node (DaemonSet
// mode).
func (s *scope) noteCreatedOn(pod *corev1.Pod) {
	s.noted.mu.Lock()
	defer s.noted.mu.Unlock()
	s.noted.created = append(s.noted.created, pod.Name)
	s.noted.createdOn = append(s.noted.createdOn, targetNode(pod))
}

// noteAdopted notes a pod another operator made that Gantry took over.
func (s *scope) noteAdopted(pod *corev1.Pod) { s.note(&s.noted.adopted, pod) }

// noteDraining notes a pod whose Slurm node drains before it is deleted.
func (s *scope) noteDraining(pod *corev1.Pod) { s.note(&s.noted.draining, pod) }

// noteCordonedForNode notes a pod cordoned because its Kubernetes Node is.
func (s *scope) noteCordonedForNode(pod *corev1.Pod) { s.note(&s.noted.cordonedForNode, pod) }

// noteDeleted notes a pod deleted for why (a cordonedFor* value,
// whyUnregistered or whyExited); an exited pod that failed is told apart.
func (s *scope) noteDeleted(why string, pod *corev1.Pod) {
	s.noted.mu.Lock()
	defer s.noted.mu.Unlock()
	if s.noted.deleted == nil {
		s.noted.deleted = map[string][]string{}
	}
	s.noted.deleted[why] = append(s.noted.deleted[why], pod.Name)
	if why == whyExited && pod.Status.Phase == corev1.PodFailed {
		if s.noted.failed == nil {
			s.noted.failed = map[string]bool{}
		}
		s.noted.failed[pod.Name] = true
	}
}

// reportPods notes what the steps did to pods in the scope's events log
// and records at once the Warnings the changes call for. Each happening is
// one event with Slinky's reason, and every creation and deletion is also
// under the pod reasons; Gantry's own happenings keep Gantry's reasons.
func (r *Reconciler) reportPods(s *scope) {
	s.noted.mu.Lock()
	defer s.noted.mu.Unlock()
	log, noted, daemonSet := &s.Events, &s.noted, isDaemonSetMode(s.Object)
	pods := func(n int) string { return events.Count(n, "Pod") }
	warn := func(reason, format string, args ...any) {
		r.Recorder.Warning(s.Object, reason, format, args...)
	}

	created := len(noted.created)
	switch {
	case len(noted.createdOn) > 0:
		log.Add(ReasonScalingUp, "Created %s for the Kubernetes nodes %s", pods(created), events.Names(noted.createdOn))
		log.Add(ReasonSuccessfulCreate, "Created %s for the Kubernetes nodes %s", pods(created), events.Names(noted.createdOn))
	case created > 0:
		log.Add(ReasonScalingUp, "Created %s", pods(created))
		log.Add(ReasonSuccessfulCreate, "Created %s", pods(created))
	}
	if len(noted.adopted) > 0 {
		log.Add(ReasonAdopted, "Adopted %s made by another operator, without restarting them: %s",
			pods(len(noted.adopted)), events.Names(noted.adopted))
	}

	scaleIn, update := noted.deleted[cordonedForScaleIn], noted.deleted[cordonedForUpdate]
	mismatch, unregistered, exited := noted.deleted[cordonedForNodeMismatch], noted.deleted[whyUnregistered], noted.deleted[whyExited]
	// DaemonSet-mode pods replaced for a new hostname are deleted as an
	// update, and reported as Slinky reports them.
	renamed, updated := split(update, renamedPods(s.daemon))
	failed, succeeded := split(exited, noted.failed)
	scaledDown := slices.Concat(scaleIn, mismatch)
	if daemonSet {
		// Slinky reports every DaemonSet-mode deletion but a rollout's so.
		scaledDown = slices.Concat(scaledDown, renamed, exited)
	}
	if len(scaledDown) > 0 {
		log.Add(ReasonScalingDown, "Deleted %s: %s", pods(len(scaledDown)), events.Names(scaledDown))
	}
	if len(updated) > 0 {
		log.Add(ReasonRollingUpdate, "Replaced %s of an old revision: %s", pods(len(updated)), events.Names(updated))
	}
	for _, d := range []struct {
		names []string
		why   string
	}{
		{scaleIn, "to scale in"},
		{update, "to roll out a new revision"},
		{exited, "that had exited, to recreate them"},
		{unregistered, "whose slurmd Slurm does not list, to recreate them"},
		{mismatch, "whose Kubernetes node is gone or no longer matches the NodeSet"},
	} {
		if len(d.names) > 0 {
			log.Add(ReasonSuccessfulDelete, "Deleted %s %s: %s", pods(len(d.names)), d.why, events.Names(d.names))
		}
	}
	if len(renamed) > 0 {
		log.Add(ReasonHostnameMismatch, "Replaced %s whose Kubernetes node's hostname changed: %s",
			pods(len(renamed)), events.Names(renamed))
	}
	switch {
	case daemonSet && len(failed) > 0:
		warn(ReasonFailedDaemonPod, "Deleted %s that failed, to recreate them: %s", pods(len(failed)), events.Names(failed))
	case len(failed) > 0:
		warn(ReasonFailedNodeSetPod, "Deleted %s that failed, to recreate them: %s", pods(len(failed)), events.Names(failed))
	}
	if daemonSet && len(succeeded) > 0 {
		log.Add(ReasonSucceededDaemonPod, "Deleted %s that succeeded, to recreate them: %s",
			pods(len(succeeded)), events.Names(succeeded))
	}
	if len(unregistered) > 0 {
		warn(ReasonSlurmNodeNotRegistered, "Deleted %s whose slurmd Slurm does not list although healthy, to recreate them: %s",
			pods(len(unregistered)), events.Names(unregistered))
	}
	if len(noted.draining) > 0 {
		log.Add(ReasonDraining, "Draining the Slurm nodes of %s before deleting them: %s",
			pods(len(noted.draining)), events.Names(noted.draining))
	}
	if len(noted.cordonedForNode) > 0 {
		log.Add(ReasonNodeCordon, "Cordoned %s because their Kubernetes Node was cordoned: %s",
			pods(len(noted.cordonedForNode)), events.Names(noted.cordonedForNode))
	}
}

// renamedPods are the names of the DaemonSet-mode pods the plan replaces
// because their node now wants another hostname; none without a plan.
func renamedPods(plan *daemonPlan) map[string]bool {
	if plan == nil {
		return nil
	}
	out := make(map[string]bool, len(plan.renamed))
	for _, p := range plan.renamed {
		out[p.Name] = true
	}
	return out
}

// split divides names into those pick selects and the rest.
func split(names []string, pick map[string]bool) (picked, rest []string) {
	for _, name := range names {
		if pick[name] {
			picked = append(picked, name)
		} else {
			rest = append(rest, name)
		}
	}
	return picked, rest
}

// podNames lists pods by name for a message, as events.Names does.
func podNames(pods []*corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return events.Names(names)
}
