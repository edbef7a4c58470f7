package nodeset

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/pkg/framework/events"
)

// Event reasons. The pod ones are the ones Kubernetes' workload
// controllers use, so existing alerts on them keep working.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonDraining         = "Draining"
	ReasonCordon           = "Cordon"
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
}

func (t *tally) add(list *[]string, pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	*list = append(*list, pod.Name)
}

// addNode records the Kubernetes node of a pod created in DaemonSet mode.
func (t *tally) addNode(pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.createdOn = append(t.createdOn, targetNode(pod))
}

// note writes what the reconcile did to pods into its event log.
func (t *tally) note(log *events.Log) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case len(t.createdOn) > 0:
		log.Add(ReasonSuccessfulCreate, "Created %s for the Kubernetes nodes %s",
			events.Count(t.created, "Pod"), events.Names(t.createdOn))
	case t.created > 0:
		log.Add(ReasonSuccessfulCreate, "Created %s", events.Count(t.created, "Pod"))
	}
	if len(t.adopted) > 0 {
		log.Add(ReasonAdopted, "Adopted %s made by another operator, without restarting them: %s",
			events.Count(len(t.adopted), "Pod"), events.Names(t.adopted))
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
	if len(t.draining) > 0 {
		log.Add(ReasonDraining, "Draining the Slurm nodes of %s before deleting them: %s",
			events.Count(len(t.draining), "Pod"), events.Names(t.draining))
	}
	if len(t.cordonedForNode) > 0 {
		log.Add(ReasonCordon, "Cordoned %s because their Kubernetes Node was cordoned: %s",
			events.Count(len(t.cordonedForNode), "Pod"), events.Names(t.cordonedForNode))
	}
}

// podNames lists pods by name for a message, as events.Names does.
func podNames(pods []*corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return events.Names(names)
}
