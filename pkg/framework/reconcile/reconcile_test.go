package reconcile

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
	"k8s.io/apimachinery/pkg/types"
	k8sevents "k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

type scope struct {
	syncsteps.Base[*corev1.ConfigMap]
}

// fakeWorkload records the phases in the order they ran; each phase's
// error and answer come from its fields.
type fakeWorkload struct {
	ran                        []string
	skip, stopAfterFinalize    bool
	loadErr, validateErr       error
	finalizeErr, stepErr       error
	statusErr                  error
	statusSaw                  error
	userError                  func(error) bool
	stepRequeue, statusRequeue time.Duration
	forgot                     []types.NamespacedName
	// recorder is the test's: Status notes how many events were recorded
	// before it ran.
	recorder           *k8sevents.FakeRecorder
	eventsBeforeStatus int
}

func (w *fakeWorkload) NewObject() *corev1.ConfigMap { return &corev1.ConfigMap{} }

func (w *fakeWorkload) NewScope(obj *corev1.ConfigMap) *scope {
	w.ran = append(w.ran, "scope")
	return &scope{Base: syncsteps.Base[*corev1.ConfigMap]{Object: obj}}
}

func (w *fakeWorkload) Steps(*scope) []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{{Name: "one", Sync: func(_ context.Context, s *scope) error {
		w.ran = append(w.ran, "steps")
		s.Events.Add("Did", "step one")
		s.Requeue.After(w.stepRequeue)
		return w.stepErr
	}}}
}

func (w *fakeWorkload) Status(_ context.Context, s *scope, err error) error {
	w.ran = append(w.ran, "status")
	w.statusSaw = err
	w.eventsBeforeStatus = len(w.recorder.Events)
	s.Requeue.After(w.statusRequeue)
	return w.statusErr
}

func (w *fakeWorkload) Forget(key types.NamespacedName) { w.forgot = append(w.forgot, key) }

func (w *fakeWorkload) Skip(context.Context, *corev1.ConfigMap) bool {
	w.ran = append(w.ran, "skip")
	return w.skip
}

func (w *fakeWorkload) Load(context.Context, *scope) error {
	w.ran = append(w.ran, "load")
	return w.loadErr
}

func (w *fakeWorkload) Validate(context.Context, *scope) error {
	w.ran = append(w.ran, "validate")
	return w.validateErr
}

func (w *fakeWorkload) UserError(err error) bool { return w.userError != nil && w.userError(err) }

// finalizing adds Finalize to a fakeWorkload.
type finalizing struct{ *fakeWorkload }

func (w finalizing) Finalize(context.Context, *scope) (bool, error) {
	w.ran = append(w.ran, "finalize")
	return w.stopAfterFinalize, w.finalizeErr
}

var (
	errLoad     = errors.New("load failed")
	errInvalid  = errors.New("invalid spec")
	errStep     = errors.New("step failed")
	errStatus   = errors.New("status failed")
	errFinalize = errors.New("finalizer failed")
	errConflict = apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("stale"))
)

func TestReconcilePhases(t *testing.T) {
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	deleting := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm",
		DeletionTimestamp: &metav1.Time{Time: time.Now()}, Finalizers: []string{"example.com/f"}}}
	tests := []struct {
		name       string
		obj        *corev1.ConfigMap
		w          fakeWorkload
		finalizer  bool
		opts       Options
		wantRan    []string
		wantErr    []error
		wantStatus error
		wantResult ctrl.Result
		wantEvents []string
		// wantEarly is how many events are recorded before the status
		// write: only a failed step's Warning, when asked for.
		wantEarly int
	}{
		{
			name:       "every phase in order, one status write, events after it",
			obj:        live,
			w:          fakeWorkload{stepRequeue: time.Minute, statusRequeue: 30 * time.Second},
			finalizer:  true,
			wantRan:    []string{"skip", "scope", "validate", "finalize", "load", "steps", "status"},
			wantResult: ctrl.Result{RequeueAfter: 30 * time.Second},
			wantEvents: []string{"Normal Did step one"},
		},
		{
			name:    "a skipped object: nothing runs, nothing is written",
			obj:     live,
			w:       fakeWorkload{skip: true},
			wantRan: []string{"skip"},
		},
		{
			name:    "a load error ends the reconcile before the steps and the status",
			obj:     live,
			w:       fakeWorkload{loadErr: errLoad},
			wantRan: []string{"skip", "scope", "validate", "load"},
			wantErr: []error{errLoad},
		},
		{
			name:       "a validation error skips finalizers and steps and goes to the status",
			obj:        live,
			w:          fakeWorkload{validateErr: errInvalid},
			finalizer:  true,
			wantRan:    []string{"skip", "scope", "validate", "status"},
			wantErr:    []error{errInvalid},
			wantStatus: errInvalid,
		},
		{
			name:       "a user error is shown by the status and not retried",
			obj:        live,
			w:          fakeWorkload{validateErr: errInvalid, userError: func(err error) bool { return errors.Is(err, errInvalid) }},
			wantRan:    []string{"skip", "scope", "validate", "status"},
			wantStatus: errInvalid,
		},
		{
			name:       "a step error goes to the status and is returned with the status error",
			obj:        live,
			w:          fakeWorkload{stepErr: errStep, statusErr: errStatus},
			wantRan:    []string{"skip", "scope", "validate", "load", "steps", "status"},
			wantErr:    []error{errStep, errStatus},
			wantStatus: errStep,
			wantEvents: []string{"Normal Did step one"},
		},
		{
			name:       "step warnings are recorded when asked for",
			obj:        live,
			w:          fakeWorkload{stepErr: errStep},
			opts:       Options{StepWarnings: true},
			wantEarly:  1,
			wantRan:    []string{"skip", "scope", "validate", "load", "steps", "status"},
			wantErr:    []error{errStep},
			wantStatus: errStep,
			wantEvents: []string{"Warning SyncStepFailed step one: step failed", "Normal Did step one"},
		},
		{
			name:       "a conflict skips the status when asked to, and what the steps did is still recorded",
			obj:        live,
			w:          fakeWorkload{stepErr: errConflict},
			opts:       Options{ConflictSkipsStatus: true},
			wantRan:    []string{"skip", "scope", "validate", "load", "steps"},
			wantErr:    []error{errConflict},
			wantEvents: []string{"Normal Did step one"},
		},
		{
			name:       "a conflict goes to the status otherwise",
			obj:        live,
			w:          fakeWorkload{stepErr: errConflict},
			wantRan:    []string{"skip", "scope", "validate", "load", "steps", "status"},
			wantErr:    []error{errConflict},
			wantStatus: errConflict,
			wantEvents: []string{"Normal Did step one"},
		},
		{
			name:      "a finalizer error ends the reconcile",
			obj:       live,
			w:         fakeWorkload{finalizeErr: errFinalize},
			finalizer: true,
			wantRan:   []string{"skip", "scope", "validate", "finalize"},
			wantErr:   []error{errFinalize},
		},
		{
			name:      "a finalizer may stop a live object's reconcile",
			obj:       live,
			w:         fakeWorkload{stopAfterFinalize: true},
			finalizer: true,
			wantRan:   []string{"skip", "scope", "validate", "finalize"},
		},
		{
			name:      "an object being deleted stops after its finalizers, before anything is loaded",
			obj:       deleting,
			finalizer: true,
			wantRan:   []string{"skip", "scope", "validate", "finalize"},
		},
		{
			name:    "an object being deleted without finalizers is left to the garbage collector",
			obj:     deleting,
			wantRan: []string{"skip"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tc.obj.DeepCopy()).Build()
			recorder := k8sevents.NewFakeRecorder(10)
			w := &tc.w
			w.recorder = recorder
			var wl Workload[*corev1.ConfigMap, *scope] = w
			if tc.finalizer {
				wl = finalizing{w}
			}
			k := New(c, events.NewRecorder(recorder), wl, tc.opts)

			res, err := k.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.obj)})

			if !slices.Equal(w.ran, tc.wantRan) {
				t.Errorf("phases ran %v, want %v", w.ran, tc.wantRan)
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %v, want it to hold %v", err, want)
				}
			}
			if len(tc.wantErr) == 0 && err != nil {
				t.Errorf("error %v, want none", err)
			}
			if !errors.Is(w.statusSaw, tc.wantStatus) || (tc.wantStatus == nil) != (w.statusSaw == nil) {
				t.Errorf("status saw %v, want %v", w.statusSaw, tc.wantStatus)
			}
			if res != tc.wantResult {
				t.Errorf("result %+v, want %+v", res, tc.wantResult)
			}
			if w.eventsBeforeStatus != tc.wantEarly {
				t.Errorf("%d events were recorded before the status write, want %d", w.eventsBeforeStatus, tc.wantEarly)
			}
			var got []string
			for len(recorder.Events) > 0 {
				got = append(got, strings.TrimSpace(<-recorder.Events))
			}
			if !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
		})
	}
}

func TestReconcileForgetsAnObjectThatIsGone(t *testing.T) {
	w := &fakeWorkload{}
	k := New(fake.NewClientBuilder().Build(), events.Recorder{}, Workload[*corev1.ConfigMap, *scope](w), Options{})
	key := types.NamespacedName{Namespace: "ns", Name: "gone"}
	res, err := k.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile = %+v, %v; want an empty result and no error", res, err)
	}
	if !slices.Equal(w.forgot, []types.NamespacedName{key}) || len(w.ran) != 0 {
		t.Errorf("forgot %v and ran %v; want %v forgotten and nothing run", w.forgot, w.ran, key)
	}
}
