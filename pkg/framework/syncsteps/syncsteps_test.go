package syncsteps

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"

	gevents "github.com/gantry-dev/gantry/pkg/framework/events"
)

var (
	errHead     = errors.New("head pod refused")
	errService  = errors.New("service quota exceeded")
	errConflict = apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("stale"))
)

// stepSpec describes a step by what it returns; the test builds the Step
// and records which steps ran.
type stepSpec struct {
	name          string
	err           error
	stopOnError   bool
	failureReason string
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		steps      []stepSpec
		wantRan    []string
		wantErrs   []error
		wantEvents []string
	}{
		{
			name:    "all succeed",
			steps:   []stepSpec{{name: "head"}, {name: "workers"}, {name: "services"}},
			wantRan: []string{"head", "workers", "services"},
		},
		{
			name:       "failure without stop continues",
			steps:      []stepSpec{{name: "services", err: errService}, {name: "head"}, {name: "workers"}},
			wantRan:    []string{"services", "head", "workers"},
			wantErrs:   []error{errService},
			wantEvents: []string{"Warning SyncStepFailed step services: service quota exceeded"},
		},
		{
			name:       "stop on error ends the chain",
			steps:      []stepSpec{{name: "head", err: errHead, stopOnError: true}, {name: "workers"}},
			wantRan:    []string{"head"},
			wantErrs:   []error{errHead},
			wantEvents: []string{"Warning SyncStepFailed step head: head pod refused"},
		},
		{
			name: "errors of all failed steps are aggregated",
			steps: []stepSpec{
				{name: "services", err: errService},
				{name: "head", err: errHead, stopOnError: true},
				{name: "workers"},
			},
			wantRan:  []string{"services", "head"},
			wantErrs: []error{errService, errHead},
			wantEvents: []string{
				"Warning SyncStepFailed step services: service quota exceeded",
				"Warning SyncStepFailed step head: head pod refused",
			},
		},
		{
			name:       "step can keep an upstream reason",
			steps:      []stepSpec{{name: "head", err: errHead, failureReason: "FailedToCreateHeadPod"}},
			wantRan:    []string{"head"},
			wantErrs:   []error{errHead},
			wantEvents: []string{"Warning FailedToCreateHeadPod step head: head pod refused"},
		},
		{
			name:     "conflicts are returned without an event",
			steps:    []stepSpec{{name: "status", err: errConflict}, {name: "workers"}},
			wantRan:  []string{"status", "workers"},
			wantErrs: []error{errConflict},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			steps := make([]Step[*podScope], 0, len(tc.steps))
			for _, s := range tc.steps {
				steps = append(steps, Step[*podScope]{
					Name: s.name,
					Sync: func(_ context.Context, _ *podScope) error {
						ran = append(ran, s.name)
						return s.err
					},
					StopOnError:   s.stopOnError,
					FailureReason: s.failureReason,
				})
			}
			recorder := events.NewFakeRecorder(10)
			obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner"}}

			err := Run(context.Background(), gevents.NewRecorder(recorder), newScope(obj), steps)

			if !slices.Equal(ran, tc.wantRan) {
				t.Errorf("ran %v, want %v", ran, tc.wantRan)
			}
			if (err != nil) != (len(tc.wantErrs) > 0) {
				t.Fatalf("error = %v, want errors %v", err, tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("error %q does not wrap %q", err, want)
				}
			}
			if got := drain(recorder); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
		})
	}
}

func TestRunStopsWhenContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran []string
	steps := []Step[*podScope]{
		{Name: "first", Sync: func(context.Context, *podScope) error { ran = append(ran, "first"); cancel(); return nil }},
		{Name: "second", Sync: func(context.Context, *podScope) error { ran = append(ran, "second"); return nil }},
	}
	err := Run(ctx, gevents.Recorder{}, newScope(&corev1.Pod{}), steps)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if !slices.Equal(ran, []string{"first"}) {
		t.Errorf("ran %v, want only the first step", ran)
	}
}

func TestRunWithoutRecorder(t *testing.T) {
	steps := []Step[*podScope]{{Name: "head", Sync: func(context.Context, *podScope) error { return errHead }}}
	if err := Run(context.Background(), gevents.Recorder{}, newScope(&corev1.Pod{}), steps); !errors.Is(err, errHead) {
		t.Errorf("error = %v, want %v", err, errHead)
	}
}

// podScope is a family's scope: Base plus what its steps share.
type podScope struct {
	Base[*corev1.Pod]
	seen []string
}

func newScope(p *corev1.Pod) *podScope { return &podScope{Base: Base[*corev1.Pod]{Object: p}} }

func TestRunSkipsAndSharesTheScope(t *testing.T) {
	steps := []Step[*podScope]{
		{Name: "read", Sync: func(_ context.Context, s *podScope) error {
			s.seen = append(s.seen, "read")
			s.Requeue.After(time.Minute)
			return nil
		}},
		{Name: "external", Skip: func(s *podScope) bool { return s.Object.Spec.NodeName == "" },
			Sync: func(_ context.Context, s *podScope) error { s.seen = append(s.seen, "external"); return nil }},
		{Name: "write", Sync: func(_ context.Context, s *podScope) error {
			s.seen = append(s.seen, "write:"+strings.Join(s.seen, ","))
			s.Requeue.After(time.Second)
			s.Requeue.After(time.Hour)
			s.Events.Add("Created", "Created %s", "x")
			return nil
		}},
	}
	s := newScope(&corev1.Pod{})
	if err := Run(context.Background(), gevents.Recorder{}, s, steps); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.seen, []string{"read", "write:read"}) {
		t.Errorf("seen %v", s.seen)
	}
	if got := s.Result().RequeueAfter; got != time.Second {
		t.Errorf("requeue after %v, want the soonest, 1s", got)
	}
	recorder := events.NewFakeRecorder(10)
	s.Events.Flush(gevents.NewRecorder(recorder), &corev1.Pod{})
	if len(drain(recorder)) == 0 {
		t.Error("the step's event is not in the scope's log")
	}
}

func drain(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestRunLeavesOwnFailuresToTheStep(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	var ran []string
	steps := []Step[*podScope]{
		{Name: "runtime", ReportsOwnFailure: true, StopOnError: true,
			Sync: func(context.Context, *podScope) error { ran = append(ran, "runtime"); return errHead }},
		{Name: "apply", Sync: func(context.Context, *podScope) error { ran = append(ran, "apply"); return nil }},
	}
	err := Run(context.Background(), gevents.NewRecorder(recorder), newScope(&corev1.Pod{}), steps)
	if err == nil || err.Error() != errHead.Error() || !errors.Is(err, errHead) {
		t.Errorf("error = %v, want %v as is", err, errHead)
	}
	if !slices.Equal(ran, []string{"runtime"}) {
		t.Errorf("ran %v, want the chain stopped", ran)
	}
	if got := drain(recorder); len(got) != 0 {
		t.Errorf("events %q, want none", got)
	}
}
