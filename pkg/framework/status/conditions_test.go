package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetConditionUsesTheGivenClock(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	later := metav1.NewTime(now.Add(time.Hour))
	var conds []metav1.Condition

	SetCondition(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Waiting"}, now)
	if got := conds[0].LastTransitionTime; !got.Equal(&now) {
		t.Fatalf("new condition stamped %v, want %v", got, now)
	}
	// Same status: the transition time stays.
	SetCondition(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "StillWaiting"}, later)
	if got := conds[0].LastTransitionTime; !got.Equal(&now) || conds[0].Reason != "StillWaiting" {
		t.Fatalf("unchanged status: %+v", conds[0])
	}
	// A transition gets the clock's time.
	SetCondition(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Done"}, later)
	if got := conds[0].LastTransitionTime; !got.Equal(&later) {
		t.Fatalf("transition stamped %v, want %v", got, later)
	}
	// An explicit timestamp (copied from a source object) wins.
	src := metav1.NewTime(now.Add(-time.Hour))
	SetCondition(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Lost", LastTransitionTime: src}, later)
	if got := conds[0].LastTransitionTime; !got.Equal(&src) {
		t.Fatalf("explicit timestamp replaced: %v", got)
	}
}
