package events

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Action is the action of every event Gantry records.
const Action = "Reconcile"

// Reasons of a Log's object changes.
const (
	ReasonCreated = "Created"
	ReasonUpdated = "Updated"
)

// MaxNames is how many names a message lists before "and N more", so that
// an event about a thousand pods stays readable.
const MaxNames = 10

// Recorder records events on the objects a reconciler manages.
type Recorder struct {
	r events.EventRecorder
	// actions are the actions of the reasons that have their own.
	actions map[string]string
}

// NewRecorder wraps r; a nil r records nothing. Every event's action is
// Action.
func NewRecorder(r events.EventRecorder) Recorder { return Recorder{r: r} }

// NewRecorderWithActions is NewRecorder for a reconciler that records an
// upstream operator's reasons with that operator's action for each (KubeRay
// records CreatedRayCluster as Create, DeletedRayCluster as Delete, ...):
// an event whose reason actions lists carries that action, any other
// reason Action.
func NewRecorderWithActions(r events.EventRecorder, actions map[string]string) Recorder {
	return Recorder{r: r, actions: actions}
}

// Normal records a Normal event on regarding.
func (r Recorder) Normal(regarding runtime.Object, reason, format string, args ...any) {
	r.record(regarding, corev1.EventTypeNormal, reason, format, args...)
}

// Warning records a Warning event on regarding.
func (r Recorder) Warning(regarding runtime.Object, reason, format string, args ...any) {
	r.record(regarding, corev1.EventTypeWarning, reason, format, args...)
}

func (r Recorder) record(regarding runtime.Object, eventType, reason, format string, args ...any) {
	if r.r == nil || regarding == nil {
		return
	}
	action := Action
	if a, ok := r.actions[reason]; ok {
		action = a
	}
	r.r.Eventf(regarding, nil, eventType, reason, action, format, args...)
}

// Log collects the Normal events of one reconcile. Safe for concurrent use
// (steps may run inside slowstart batches); the zero value is empty.
type Log struct {
	mu      sync.Mutex
	reasons []string // in the order first seen
	lines   map[string][]string
	// lists holds AddItem's items per reason and lead, in order.
	lists     map[string]map[string][]string
	listLeads map[string][]string
}

// Add notes a message under reason.
func (l *Log) Add(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.see(reason)
	l.lines[reason] = append(l.lines[reason], msg)
}

// AddItem notes item in the list that lead opens under reason: every item
// of one reason and lead makes one message "<lead> <item>, <item>".
func (l *Log) AddItem(reason, lead, item string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.see(reason)
	if l.lists == nil {
		l.lists, l.listLeads = map[string]map[string][]string{}, map[string][]string{}
	}
	if l.lists[reason] == nil {
		l.lists[reason] = map[string][]string{}
	}
	if _, ok := l.lists[reason][lead]; !ok {
		l.listLeads[reason] = append(l.listLeads[reason], lead)
	}
	l.lists[reason][lead] = append(l.lists[reason][lead], item)
}

// Created notes that obj was created; Updated, that it was changed.
func (l *Log) Created(obj client.Object) { l.AddItem(ReasonCreated, "Created", Describe(obj)) }

// Updated notes that obj was changed.
func (l *Log) Updated(obj client.Object) { l.AddItem(ReasonUpdated, "Updated", Describe(obj)) }

func (l *Log) see(reason string) {
	if l.lines == nil {
		l.lines = map[string][]string{}
	}
	if !slices.Contains(l.reasons, reason) {
		l.reasons = append(l.reasons, reason)
	}
}

// Flush records one Normal event per reason on regarding, in the order the
// reasons were first noted, and empties the log.
func (l *Log) Flush(r Recorder, regarding runtime.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, reason := range l.reasons {
		msgs := slices.Clone(l.lines[reason])
		for _, lead := range l.listLeads[reason] {
			msgs = append(msgs, lead+" "+strings.Join(l.lists[reason][lead], ", "))
		}
		r.Normal(regarding, reason, "%s", strings.Join(msgs, "; "))
	}
	l.reasons, l.lines, l.lists, l.listLeads = nil, nil, nil, nil
}

// Count renders a count for a message: "1 Pod", "3 Pods".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Names renders names sorted, the first MaxNames of them and "and N more".
func Names(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	if len(sorted) <= MaxNames {
		return strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(sorted[:MaxNames], ", "), len(sorted)-MaxNames)
}

// Describe names obj by kind and name, "Service a".
func Describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = reflect.TypeOf(obj).Elem().Name()
	}
	return kind + " " + obj.GetName()
}
