package nodeset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestStepsWaitForExpectationsMetBeforeThePodsWereListed: a pod create the
// informer reports after Load listed the pods leaves that list stale, so
// the steps (which would create the pod again) wait for the next
// reconcile, whose list shows it.
func TestStepsWaitForExpectationsMetBeforeThePodsWereListed(t *testing.T) {
	scheme := testScheme(t)
	ctx := t.Context()
	n := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj()
	c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(n).
		WithIndex(&corev1.Pod{}, IndexPodOwner, podOwnerIndex).Build()
	r := newReconciler(c, c, nil, nil)

	s := r.NewScope(n.DeepCopy())
	r.expectations.ExpectCreations(s.key, expectationGroup, 1)
	if err := r.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	// The create reaches the informer after the list.
	r.expectations.CreationObserved(s.key, expectationGroup, "uid-cpu-0")
	if steps := r.Steps(s); len(steps) != 0 {
		t.Errorf("%d steps run on a pod list taken while a create was in flight", len(steps))
	}

	next := r.NewScope(n.DeepCopy())
	if err := r.Load(ctx, next); err != nil {
		t.Fatal(err)
	}
	if steps := r.Steps(next); len(steps) == 0 {
		t.Error("no steps once the list was taken with the expectations met")
	}
}
