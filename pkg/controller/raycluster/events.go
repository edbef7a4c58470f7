package raycluster

import (
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// reasonReconciled is the reason of an aggregated event that reports
// different kinds of changes made in one reconcile.
const reasonReconciled = "Reconciled"

// eventLog collects the changes one reconcile made so it emits a single
// Normal event ("Created Service rc-head-svc; created head Pod rc-head-x;
// created 3 worker Pods in group cpu") instead of one per object: every
// event is an API write. Warnings are emitted at once, one per failure, so
// their KubeRay reasons stay intact for alerts.
type eventLog struct {
	mu       sync.Mutex
	reasons  []rayv1.EventReason
	messages []string
}

func (l *eventLog) add(reason rayv1.EventReason, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reasons = append(l.reasons, reason)
	l.messages = append(l.messages, msg)
}

// flush emits the aggregated event, if anything happened.
func (l *eventLog) flush(recorder events.EventRecorder, obj runtime.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if recorder == nil || len(l.messages) == 0 {
		return
	}
	reason := string(l.reasons[0])
	for _, r := range l.reasons[1:] {
		if string(r) != reason {
			reason = reasonReconciled
			break
		}
	}
	msg := strings.Join(l.messages, "; ")
	recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Reconcile", "%s", msg)
	l.reasons, l.messages = nil, nil
}

func warn(recorder events.EventRecorder, obj runtime.Object, reason rayv1.EventReason, format string, args ...any) {
	if recorder != nil {
		recorder.Eventf(obj, nil, corev1.EventTypeWarning, string(reason), "Reconcile", format, args...)
	}
}

// countOf renders a count for an event message: "1 worker Pod", "3 worker Pods".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
