package core

import (
	"context"
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8sevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
)

func drain(rec *k8sevents.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestSyncNotesChanges: a created or changed object is noted in the log,
// an unchanged one is not, and the log renders them as one event per
// reason.
func TestSyncNotesChanges(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	rec := k8sevents.NewFakeRecorder(10)
	r := New(c, c, rec)
	ctx := context.Background()
	cm := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"k": v}}
	}
	var log events.Log
	for _, obj := range []*corev1.ConfigMap{cm("a", "1"), cm("b", "1")} {
		if err := r.Sync(ctx, &log, obj); err != nil {
			t.Fatal(err)
		}
	}
	log.Flush(r.Recorder, cm("owner", ""))
	if got := drain(rec); len(got) != 1 || got[0] != "Normal Created Created ConfigMap a, ConfigMap b" {
		t.Errorf("events after creating = %q", got)
	}
	for _, obj := range []*corev1.ConfigMap{cm("a", "1"), cm("b", "2")} {
		if err := r.Sync(ctx, &log, obj); err != nil {
			t.Fatal(err)
		}
	}
	log.Flush(r.Recorder, cm("owner", ""))
	if got := drain(rec); len(got) != 1 || got[0] != "Normal Updated Updated ConfigMap b" {
		t.Errorf("events after updating = %q", got)
	}
}

// TestRecordTransitionOncePerChange: an event is recorded when Ready
// changes, once even when a stale read repeats the transition, and only
// for the states Transitions names.
func TestRecordTransitionOncePerChange(t *testing.T) {
	rec := k8sevents.NewFakeRecorder(10)
	r := New(nil, nil, rec)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: types.UID("x")}}
	tr := Transitions{
		Warn: func(c metav1.Condition) bool { return c.Reason != "Starting" },
		Note: func(c metav1.Condition) string { return "ready: " + c.Message },
	}
	missing := NotReady(obj, ReasonReferenceNotFound, "Secret ns/k not found")
	starting := NotReady(obj, "Starting", "0/1")
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Up", Message: "1/1"}
	steps := []struct {
		previous *metav1.Condition
		cond     metav1.Condition
		want     []string
	}{
		{nil, missing, []string{"Warning ReferenceNotFound Secret ns/k not found"}},
		{nil, missing, nil},       // a stale read: the event is out
		{&missing, missing, nil},  // no change
		{&missing, starting, nil}, // not worth a Warning
		{&starting, ready, []string{"Normal Up ready: 1/1"}},
	}
	for i, s := range steps {
		r.RecordTransition(obj, s.previous, s.cond, tr)
		if got := drain(rec); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("step %d: events %q, want %q", i, got, s.want)
		}
	}
}

func TestReadyConditions(t *testing.T) {
	obj := &slinkyv1beta1.Controller{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	sts := func(gen, observed int64, ready, updated int32) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}}
		s.Generation = gen
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated}
		return s
	}
	deploy := func(available int32) *appsv1.Deployment {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
		d.Status = appsv1.DeploymentStatus{AvailableReplicas: available, UpdatedReplicas: available}
		return d
	}
	noController := fmt.Errorf("step Controller: %w", &refresolver.NotFoundError{Kind: "Controller", Namespace: "ns", Name: "slurm"})
	noKey := fmt.Errorf("step Keys: %w", &refresolver.NotFoundError{Kind: "Secret", Namespace: "ns", Name: "k"})
	tests := []struct {
		name            string
		got             metav1.Condition
		status          metav1.ConditionStatus
		reason, message string
	}{
		{"ready", StatefulSetReady(obj, "slurmctld", sts(1, 1, 2, 2)), metav1.ConditionTrue, ReasonStatefulSetReady, "2/2 slurmctld pods ready"},
		{"not ready", StatefulSetReady(obj, "slurmctld", sts(1, 1, 1, 2)), metav1.ConditionFalse, ReasonStatefulSetNotReady, "1/2 slurmctld pods ready"},
		{"not observed", StatefulSetReady(obj, "slurmctld", sts(2, 1, 2, 2)), metav1.ConditionFalse, ReasonStatefulSetNotReady,
			"2/2 slurmctld pods ready (rollout of the current spec not yet observed)"},
		{"no StatefulSet", StatefulSetReady(obj, "slurmctld", nil), metav1.ConditionFalse, ReasonStatefulSetNotReady,
			"the slurmctld StatefulSet does not exist yet"},
		{"available", DeploymentAvailable(obj, "login", deploy(1)), metav1.ConditionTrue, ReasonDeploymentAvailable, "1/1 login pods available"},
		{"unavailable", DeploymentAvailable(obj, "login", deploy(0)), metav1.ConditionFalse, ReasonDeploymentUnavailable, "0/1 login pods available"},
		{"no Deployment", DeploymentAvailable(obj, "login", nil), metav1.ConditionFalse, ReasonDeploymentUnavailable,
			"the login Deployment does not exist yet"},
		{"external", External(obj, "slurmdbd", &slinkyv1beta1.ExternalConfig{Host: "db", Port: 6819}), metav1.ConditionTrue, ReasonExternal,
			"slurmdbd runs outside Kubernetes at db:6819"},
		{"no Controller", Failed(obj, errors.Join(noController)), metav1.ConditionFalse, ReasonControllerNotFound, "Controller ns/slurm not found"},
		{"no key", Failed(obj, errors.Join(noKey)), metav1.ConditionFalse, ReasonReferenceNotFound, "step Keys: Secret ns/k not found"},
		{"failed", Failed(obj, errors.New("boom")), metav1.ConditionFalse, ReasonSyncFailed, "boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.got
			if g.Type != ConditionReady || g.ObservedGeneration != 4 || g.Status != tc.status || g.Reason != tc.reason || g.Message != tc.message {
				t.Errorf("got %+v, want %s %s %q", g, tc.status, tc.reason, tc.message)
			}
		})
	}
}
