package nodeset

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

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

// tally collects what one reconcile did to pods so it is reported as one
// message per kind of change ("Created 5 Pods"), not one per pod: every
// event is an API write.
type tally struct {
	mu      sync.Mutex
	created int
	// createdOn names the Kubernetes nodes of pods created in DaemonSet mode.
	createdOn       []string
	adopted         []string
	deletedScaleIn  []string
	deletedUpdate   []string
	deletedFinished []string
	// deletedUnregistered: healthy pods Slurm had no node for.
	deletedUnregistered []string
	// deletedNodeMismatch: DaemonSet-mode pods whose node went or no
	// longer matches.
	deletedNodeMismatch []string
	draining            []string
	cordonedForNode     []string
	// failed are the pods recorded while in phase Failed, by name.
	failed map[string]bool
	// renamed are DaemonSet-mode pods replaced for a new hostname, by name.
	renamed map[string]bool
}

func (t *tally) add(list *[]string, pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	*list = append(*list, pod.Name)
	if pod.Status.Phase == corev1.PodFailed {
		if t.failed == nil {
			t.failed = map[string]bool{}
		}
		t.failed[pod.Name] = true
	}
}

// markRenamed records pods that go because their node wants another
// hostname; they are deleted as an update, and reported as Slinky does.
func (t *tally) markRenamed(pods []*corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range pods {
		if t.renamed == nil {
			t.renamed = map[string]bool{}
		}
		t.renamed[p.Name] = true
	}
}

// tallyWarning is a Warning the pod changes call for. It is recorded after
// the log is flushed, since it too reports what the status now shows.
type tallyWarning struct{ reason, message string }

func (w tallyWarning) record(rec events.Recorder, regarding runtime.Object) {
	rec.Warning(regarding, w.reason, "%s", w.message)
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

// addNode records the Kubernetes node of a pod created in DaemonSet mode.
func (t *tally) addNode(pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.createdOn = append(t.createdOn, targetNode(pod))
}

// note writes what the reconcile did to pods into its event log, and
// returns the Warnings to record after it. Each happening is one event
// with Slinky's reason, and every creation and deletion is also under the
// pod reasons; Gantry's own happenings keep Gantry's reasons.
func (t *tally) note(log *events.Log, daemonSet bool) []tallyWarning {
	t.mu.Lock()
	defer t.mu.Unlock()
	var warnings []tallyWarning
	warn := func(reason, format string, args ...any) {
		warnings = append(warnings, tallyWarning{reason, fmt.Sprintf(format, args...)})
	}
	switch {
	case len(t.createdOn) > 0:
		msg := fmt.Sprintf("Created %s for the Kubernetes nodes %s", events.Count(t.created, "Pod"), events.Names(t.createdOn))
		log.Add(ReasonScalingUp, "%s", msg)
		log.Add(ReasonSuccessfulCreate, "%s", msg)
	case t.created > 0:
		log.Add(ReasonScalingUp, "Created %s", events.Count(t.created, "Pod"))
		log.Add(ReasonSuccessfulCreate, "Created %s", events.Count(t.created, "Pod"))
	}
	if len(t.adopted) > 0 {
		log.Add(ReasonAdopted, "Adopted %s made by another operator, without restarting them: %s",
			events.Count(len(t.adopted), "Pod"), events.Names(t.adopted))
	}

	renamed, updated := split(t.deletedUpdate, t.renamed)
	failed, succeeded := split(t.deletedFinished, t.failed)
	scaledDown := slices.Concat(t.deletedScaleIn, t.deletedNodeMismatch)
	if daemonSet {
		// Slinky reports every DaemonSet-mode deletion but a rollout's so.
		scaledDown = slices.Concat(scaledDown, renamed, t.deletedFinished)
	}
	if len(scaledDown) > 0 {
		log.Add(ReasonScalingDown, "Deleted %s: %s", events.Count(len(scaledDown), "Pod"), events.Names(scaledDown))
	}
	if len(updated) > 0 {
		log.Add(ReasonRollingUpdate, "Replaced %s of an old revision: %s", events.Count(len(updated), "Pod"), events.Names(updated))
	}
	for _, d := range []struct {
		names []string
		why   string
	}{
		{t.deletedScaleIn, "to scale in"},
		{t.deletedUpdate, "to roll out a new revision"},
		{t.deletedFinished, "that had exited, to recreate them"},
		{t.deletedUnregistered, "whose slurmd Slurm does not list, to recreate them"},
		{t.deletedNodeMismatch, "whose Kubernetes node is gone or no longer matches the NodeSet"},
	} {
		if len(d.names) > 0 {
			log.Add(ReasonSuccessfulDelete, "Deleted %s %s: %s", events.Count(len(d.names), "Pod"), d.why, events.Names(d.names))
		}
	}
	if len(renamed) > 0 {
		log.Add(ReasonHostnameMismatch, "Replaced %s whose Kubernetes node's hostname changed: %s",
			events.Count(len(renamed), "Pod"), events.Names(renamed))
	}
	switch {
	case daemonSet && len(failed) > 0:
		warn(ReasonFailedDaemonPod, "Deleted %s that failed, to recreate them: %s", events.Count(len(failed), "Pod"), events.Names(failed))
	case len(failed) > 0:
		warn(ReasonFailedNodeSetPod, "Deleted %s that failed, to recreate them: %s", events.Count(len(failed), "Pod"), events.Names(failed))
	}
	if daemonSet && len(succeeded) > 0 {
		log.Add(ReasonSucceededDaemonPod, "Deleted %s that succeeded, to recreate them: %s",
			events.Count(len(succeeded), "Pod"), events.Names(succeeded))
	}
	if len(t.deletedUnregistered) > 0 {
		warn(ReasonSlurmNodeNotRegistered, "Deleted %s whose slurmd Slurm does not list although healthy, to recreate them: %s",
			events.Count(len(t.deletedUnregistered), "Pod"), events.Names(t.deletedUnregistered))
	}
	if len(t.draining) > 0 {
		log.Add(ReasonDraining, "Draining the Slurm nodes of %s before deleting them: %s",
			events.Count(len(t.draining), "Pod"), events.Names(t.draining))
	}
	if len(t.cordonedForNode) > 0 {
		log.Add(ReasonNodeCordon, "Cordoned %s because their Kubernetes Node was cordoned: %s",
			events.Count(len(t.cordonedForNode), "Pod"), events.Names(t.cordonedForNode))
	}
	return warnings
}

// podNames lists pods by name for a message, as events.Names does.
func podNames(pods []*corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return events.Names(names)
}
