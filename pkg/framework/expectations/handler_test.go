package expectations

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	ownerLabel = "example.dev/cluster"
	groupLabel = "example.dev/group"
)

type podWrapper struct{ corev1.Pod }

func makePod(uid types.UID) *podWrapper {
	return &podWrapper{corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default",
		Name:      "pod-" + string(uid),
		UID:       uid,
		Labels:    map[string]string{ownerLabel: "rc", groupLabel: cpu},
	}}}
}

func (p *podWrapper) Unlabelled() *podWrapper {
	p.Labels = nil
	return p
}

func (p *podWrapper) Terminating() *podWrapper {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

func (p *podWrapper) Obj() *corev1.Pod { return &p.Pod }

// deliver sends one informer event through h.
type deliver func(h handler.EventHandler)

func created(pod *corev1.Pod) deliver {
	return func(h handler.EventHandler) {
		h.Create(context.Background(), event.CreateEvent{Object: pod}, nil)
	}
}

func updated(old, updatedPod *corev1.Pod) deliver {
	return func(h handler.EventHandler) {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updatedPod}, nil)
	}
}

func deleted(pod *corev1.Pod) deliver {
	return func(h handler.EventHandler) {
		h.Delete(context.Background(), event.DeleteEvent{Object: pod}, nil)
	}
}

func generic(pod *corev1.Pod) deliver {
	return func(h handler.EventHandler) {
		h.Generic(context.Background(), event.GenericEvent{Object: pod}, nil)
	}
}

func TestHandlerFeedsExpectations(t *testing.T) {
	tests := []struct {
		name          string
		expectCreate  int
		expectDelete  []types.UID
		events        []deliver
		wantCreations int
		wantDeletions int
	}{
		{
			name:          "pod add consumes a creation",
			expectCreate:  2,
			events:        []deliver{created(makePod("a").Obj())},
			wantCreations: 1,
		},
		{
			name:          "pods of untracked owners are ignored",
			expectCreate:  1,
			events:        []deliver{created(makePod("a").Unlabelled().Obj())},
			wantCreations: 1,
		},
		{
			name:         "deletion timestamp counts as deleted",
			expectDelete: []types.UID{"a"},
			events:       []deliver{updated(makePod("a").Obj(), makePod("a").Terminating().Obj())},
		},
		{
			name:          "ordinary updates change nothing",
			expectCreate:  1,
			expectDelete:  []types.UID{"a"},
			events:        []deliver{updated(makePod("a").Obj(), makePod("a").Obj())},
			wantCreations: 1,
			wantDeletions: 1,
		},
		{
			name:          "delete event observes the deletion",
			expectDelete:  []types.UID{"a", "b"},
			events:        []deliver{deleted(makePod("b").Obj())},
			wantDeletions: 1,
		},
		{
			name:         "pod first seen already terminating is both created and deleted",
			expectCreate: 1,
			expectDelete: []types.UID{"a"},
			events:       []deliver{created(makePod("a").Terminating().Obj())},
		},
		{
			name:          "generic events are ignored",
			expectCreate:  1,
			events:        []deliver{generic(makePod("a").Obj())},
			wantCreations: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New()
			e.ExpectCreations(owner, cpu, tc.expectCreate)
			e.ExpectDeletions(owner, cpu, tc.expectDelete...)
			h := e.Handler(LabelOwner(ownerLabel, groupLabel), nil)
			for _, ev := range tc.events {
				ev(h)
			}
			creations, deletions := e.Pending(owner, cpu)
			if creations != tc.wantCreations || deletions != tc.wantDeletions {
				t.Errorf("Pending = (%d, %d), want (%d, %d)", creations, deletions, tc.wantCreations, tc.wantDeletions)
			}
		})
	}
}

// TestCreateEventOrder covers both orders in which a controller's Create call
// and the informer's add event can meet: creations are expected before the
// Create call, so either order ends satisfied and neither ends early.
func TestCreateEventOrder(t *testing.T) {
	tests := []struct {
		name                     string
		eventBeforeCreateReturns bool
		// wantSatisfiedAfterCreate is what a reconcile running right after
		// the Create call returned would see.
		wantSatisfiedAfterCreate bool
	}{
		{name: "event arrives after Create returned", eventBeforeCreateReturns: false, wantSatisfiedAfterCreate: false},
		{name: "event arrives before Create returned", eventBeforeCreateReturns: true, wantSatisfiedAfterCreate: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New()
			h := e.Handler(LabelOwner(ownerLabel, groupLabel), nil)
			pod := makePod("new").Obj()

			e.ExpectCreations(owner, cpu, 1)
			if tc.eventBeforeCreateReturns {
				created(pod)(h)
			}
			if got := e.Satisfied(owner, cpu); got != tc.wantSatisfiedAfterCreate {
				t.Errorf("Satisfied right after Create = %v, want %v", got, tc.wantSatisfiedAfterCreate)
			}
			if !tc.eventBeforeCreateReturns {
				created(pod)(h)
			}
			if !e.Satisfied(owner, cpu) {
				t.Error("not satisfied after the pod was observed")
			}
		})
	}
}

// TestHandlerObservesBeforeEnqueue guards against the lost wakeup: the
// reconcile triggered by an event must already see that event's effect, so
// the event that completes the expectations must find them satisfied.
func TestHandlerObservesBeforeEnqueue(t *testing.T) {
	tests := []struct {
		name   string
		events []deliver
	}{
		{name: "creation completes", events: []deliver{deleted(makePod("old").Obj()), created(makePod("new").Obj())}},
		{name: "deletion completes", events: []deliver{created(makePod("new").Obj()), deleted(makePod("old").Obj())}},
		{name: "terminating update completes", events: []deliver{
			created(makePod("new").Obj()),
			updated(makePod("old").Obj(), makePod("old").Terminating().Obj()),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New()
			e.ExpectCreations(owner, cpu, 1)
			e.ExpectDeletions(owner, cpu, "old")

			var satisfiedWhenEnqueued []bool
			record := func() { satisfiedWhenEnqueued = append(satisfiedWhenEnqueued, e.Satisfied(owner, cpu)) }
			next := handler.Funcs{
				CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
					record()
				},
				UpdateFunc: func(context.Context, event.UpdateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
					record()
				},
				DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
					record()
				},
			}
			h := e.Handler(LabelOwner(ownerLabel, groupLabel), next)
			for _, ev := range tc.events {
				ev(h)
			}

			want := []bool{false, true}
			if !slices.Equal(satisfiedWhenEnqueued, want) {
				t.Errorf("Satisfied seen by the next handler = %v, want %v", satisfiedWhenEnqueued, want)
			}
		})
	}
}

func TestLabelOwner(t *testing.T) {
	tests := []struct {
		name      string
		labels    map[string]string
		wantKey   string
		wantGroup string
		wantOK    bool
	}{
		{name: "both labels", labels: map[string]string{ownerLabel: "rc", groupLabel: "gpu"}, wantKey: "default/rc", wantGroup: "gpu", wantOK: true},
		{name: "no group", labels: map[string]string{ownerLabel: "rc"}},
		{name: "no owner", labels: map[string]string{groupLabel: "gpu"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := makePod("a").Obj()
			pod.Labels = tc.labels
			key, group, ok := LabelOwner(ownerLabel, groupLabel)(pod)
			if key != tc.wantKey || group != tc.wantGroup || ok != tc.wantOK {
				t.Errorf("got (%q, %q, %v), want (%q, %q, %v)", key, group, ok, tc.wantKey, tc.wantGroup, tc.wantOK)
			}
		})
	}
}
