package nodeset

import (
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestSyncFinalizersDropsUpstreamReservation: a NodeSet migrated from the
// Slinky operator loses upstream's reservation finalizer (Gantry makes no
// reservations), and only that one; nothing is sent when it is not there,
// and a NodeSet already gone is not an error.
func TestSyncFinalizersDropsUpstreamReservation(t *testing.T) {
	scheme := testScheme(t)
	ctx := t.Context()
	n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
	n.Finalizers = []string{"example.com/keep", slinkyv1beta1.FinalizerNodeSetReservation}
	c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(n).Build()
	r := newReconciler(c, c, nil, nil)

	live := &slinkyv1beta1.NodeSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(n), live); err != nil {
		t.Fatal(err)
	}
	if err := r.syncFinalizers(ctx, live); err != nil {
		t.Fatal(err)
	}
	got := &slinkyv1beta1.NodeSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(n), got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"example.com/keep"}; !slices.Equal(got.Finalizers, want) || !slices.Equal(live.Finalizers, want) {
		t.Errorf("finalizers %v (in the reconcile's copy %v), want %v", got.Finalizers, live.Finalizers, want)
	}

	if err := r.syncFinalizers(ctx, got); err != nil {
		t.Fatal(err)
	}
	again := &slinkyv1beta1.NodeSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(n), again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("a NodeSet without the finalizer was written (resourceVersion %s -> %s)", got.ResourceVersion, again.ResourceVersion)
	}

	gone := n.DeepCopy()
	gone.Name, gone.ResourceVersion = "gone", "1"
	if err := r.syncFinalizers(ctx, gone); err != nil {
		t.Errorf("a NodeSet already gone: %v", err)
	}
}
