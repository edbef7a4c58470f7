package status

import (
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReportedChangedOncePerCondition(t *testing.T) {
	var r Reported
	missing := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ReferenceNotFound", Message: "Secret x not found"}
	if !r.Changed("a", missing) {
		t.Fatal("the first condition is a change")
	}
	if r.Changed("a", missing) {
		t.Fatal("the same condition again is not a change")
	}
	if !r.Changed("b", missing) {
		t.Fatal("another object's condition is its own")
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}
	if !r.Changed("a", ready) || r.Changed("a", ready) {
		t.Fatal("a new status is one change")
	}
	other := metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Ready"}
	if !r.Changed("a", other) {
		t.Fatal("condition types are tracked apart")
	}
	r.Forget("a")
	if !r.Changed("a", ready) {
		t.Fatal("a forgotten object starts afresh")
	}

	// Two reconciles racing on one stale status: one of them records it.
	var wg sync.WaitGroup
	var n sync.Map
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.Changed("c", missing) {
				n.Store(i, true)
			}
		}()
	}
	wg.Wait()
	count := 0
	n.Range(func(_, _ any) bool { count++; return true })
	if count != 1 {
		t.Fatalf("%d of 8 concurrent reconciles saw a change, want 1", count)
	}
}
