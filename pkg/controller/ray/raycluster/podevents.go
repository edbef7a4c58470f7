package raycluster

import (
	"fmt"
	"strings"
	"sync"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/events"
)

// maxEventNote is the longest note the API server accepts on an
// events.k8s.io/v1 Event (1 KiB); a longer event is refused and lost.
const maxEventNote = 1024

// podEvents collects the Pods one reconcile created or deleted in bulk, by
// KubeRay's event reason (CreatedWorkerPod, DeletedWorkerPod, DeletedPod;
// the one head Pod's CreatedHeadPod and DeletedHeadPod go to the Log
// directly). KubeRay records one event per Pod ("Created worker Pod
// <ns>/<name>"); Gantry records one per reason and reconcile, with the same
// reason, which alerts filter on, and as many of the Pods' names as fit in
// one event.
type podEvents struct {
	mu      sync.Mutex
	reasons []rayv1.EventReason
	notes   map[rayv1.EventReason][]podNote
}

// podNote is one change: what happened ("Created 3 worker Pods in group
// cpu") and to which Pods.
type podNote struct {
	what  string
	names []string
}

// add notes that the Pods names went through reason; format and args say
// what happened. No names, no note.
func (e *podEvents) add(reason rayv1.EventReason, names []string, format string, args ...any) {
	if len(names) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.notes == nil {
		e.notes = map[rayv1.EventReason][]podNote{}
	}
	if _, ok := e.notes[reason]; !ok {
		e.reasons = append(e.reasons, reason)
	}
	e.notes[reason] = append(e.notes[reason], podNote{what: fmt.Sprintf(format, args...), names: names})
}

// flush moves the notes into log, one message per reason, and empties e.
func (e *podEvents) flush(log *events.Log) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, reason := range e.reasons {
		log.Add(string(reason), "%s", podEventMessage(e.notes[reason], maxEventNote))
	}
	e.reasons, e.notes = nil, nil
}

// podEventMessage joins notes as "<what>: <name>, <name>; <what>: ...",
// naming as many Pods, in order, as keep it within limit bytes ("and N
// more" for the rest). Notes too many to fit even without names are cut.
func podEventMessage(notes []podNote, limit int) string {
	total := 0
	for _, n := range notes {
		total += len(n.names)
	}
	shown := 0
	msg := renderPodNotes(notes, 0)
	for shown < total {
		next := renderPodNotes(notes, shown+1)
		if len(next) > limit {
			break
		}
		shown, msg = shown+1, next
	}
	if len(msg) > limit {
		msg = msg[:limit-3] + "..."
	}
	return msg
}

// renderPodNotes renders notes naming the first shown Pods of all.
func renderPodNotes(notes []podNote, shown int) string {
	parts := make([]string, 0, len(notes))
	for _, n := range notes {
		k := min(shown, len(n.names))
		shown -= k
		part := n.what
		if k > 0 {
			part += ": " + strings.Join(n.names[:k], ", ")
			if rest := len(n.names) - k; rest > 0 {
				part += fmt.Sprintf(" and %d more", rest)
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
