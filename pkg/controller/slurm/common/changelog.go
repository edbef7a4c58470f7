package common

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/pkg/framework/syncobject"
)

// Event reasons for the objects a reconcile created or changed.
const (
	ReasonCreated = "Created"
	ReasonUpdated = "Updated"
	// ActionSync is the events API's action for these events.
	ActionSync = "Sync"
)

// ChangeLog collects what one reconcile created and updated so that it is
// reported as at most two events ("Created Service a, StatefulSet b")
// instead of one per object: every event is an API write.
type ChangeLog struct {
	created, updated []string
}

// Add notes the result of syncing obj; unchanged and skipped objects are
// not news.
func (l *ChangeLog) Add(res syncobject.Result, obj client.Object) {
	desc := kindOf(obj) + " " + obj.GetName()
	switch res {
	case syncobject.Created:
		l.created = append(l.created, desc)
	case syncobject.Updated:
		l.updated = append(l.updated, desc)
	}
}

// Record emits the collected changes as Normal events on regarding.
func (l *ChangeLog) Record(recorder events.EventRecorder, regarding runtime.Object) {
	if recorder == nil {
		return
	}
	if len(l.created) > 0 {
		recorder.Eventf(regarding, nil, corev1.EventTypeNormal, ReasonCreated, ActionSync, "Created %s", strings.Join(l.created, ", "))
	}
	if len(l.updated) > 0 {
		recorder.Eventf(regarding, nil, corev1.EventTypeNormal, ReasonUpdated, ActionSync, "Updated %s", strings.Join(l.updated, ", "))
	}
}

// Empty reports whether nothing was created or updated.
func (l *ChangeLog) Empty() bool { return len(l.created) == 0 && len(l.updated) == 0 }

func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprint(reflect.TypeOf(obj).Elem().Name())
}
