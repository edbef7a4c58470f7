package nodeset

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
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

// maxNamesInEvent keeps an event about a thousand pods readable.
const maxNamesInEvent = 10

// tally collects what one reconcile did to pods so it is reported as one
// event per kind of change ("Created 5 Pods"), not one per pod: every
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

func (t *tally) record(recorder events.EventRecorder, n *slinkyv1beta1.NodeSet) {
	if recorder == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	emit := func(eventType, reason, format string, args ...any) {
		recorder.Eventf(n, nil, eventType, reason, common.ActionSync, format, args...)
	}
	switch {
	case len(t.createdOn) > 0:
		emit(corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created %s for the Kubernetes nodes %s",
			plural(t.created, "Pod"), nameList(t.createdOn))
	case t.created > 0:
		emit(corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created %s", plural(t.created, "Pod"))
	}
	if len(t.adopted) > 0 {
		emit(corev1.EventTypeNormal, ReasonAdopted, "Adopted %s made by another operator, without restarting them: %s",
			plural(len(t.adopted), "Pod"), nameList(t.adopted))
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
			emit(corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted %s %s: %s", plural(len(d.names), "Pod"), d.why, nameList(d.names))
		}
	}
	if len(t.draining) > 0 {
		emit(corev1.EventTypeNormal, ReasonDraining, "Draining the Slurm nodes of %s before deleting them: %s",
			plural(len(t.draining), "Pod"), nameList(t.draining))
	}
	if len(t.cordonedForNode) > 0 {
		emit(corev1.EventTypeNormal, ReasonCordon, "Cordoned %s because their Kubernetes Node was cordoned: %s",
			plural(len(t.cordonedForNode), "Pod"), nameList(t.cordonedForNode))
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func nameList(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	if len(sorted) <= maxNamesInEvent {
		return strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(sorted[:maxNamesInEvent], ", "), len(sorted)-maxNamesInEvent)
}

func podNames(pods []*corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return nameList(names)
}
