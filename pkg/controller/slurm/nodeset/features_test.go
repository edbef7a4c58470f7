package nodeset

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestSyncFeatures: the Node's features.slinky.slurm.net/spec becomes the
// "k8s/" features of its pods' Slurm nodes, available and active, and
// Gantry touches no other feature.
func TestSyncFeatures(t *testing.T) {
	tests := []struct {
		name       string
		annotation *string
		current    []string
		want       []string
		wantWrites int
	}{
		{name: "features added beside the NodeSet's", annotation: ptrTo("GPU, nn-75bf,GPU,"), current: []string{"ns"},
			want: []string{"k8s/GPU", "k8s/nn-75bf", "ns"}, wantWrites: 1},
		{name: "replaced, others kept", annotation: ptrTo("GPU"), current: []string{"k8s/old", "ns", "rack4"},
			want: []string{"k8s/GPU", "ns", "rack4"}, wantWrites: 1},
		{name: "no annotation clears the prefixed ones", current: []string{"k8s/GPU", "ns"}, want: []string{"ns"}, wantWrites: 1},
		{name: "in sync: nothing sent", annotation: ptrTo("GPU"), current: []string{"ns", "k8s/GPU"},
			want: []string{"ns", "k8s/GPU"}},
		{name: "no annotation and none prefixed: nothing sent", current: []string{"ns"}, want: []string{"ns"}},
	}
	scheme := testScheme(t)
	ctx := context.Background()
	n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kn-0"}}
			if tt.annotation != nil {
				node.Annotations = map[string]string{slinkyv1beta1.AnnotationNodeFeaturesSpec: *tt.annotation}
			}
			pod := makePod("ns-0").ready(t0).obj()
			pod.Spec.NodeName = node.Name
			c := ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(node).Build()
			r := newReconciler(c, c, nil, nil)
			slurmd := fake.New(slurm.Node{Name: "ns-0", State: []slurm.NodeState{slurm.NodeStateIdle}, Features: tt.current})
			s := newTestScope(n, loadSlurmView(ctx, slurmd, t0), pod)
			if err := r.syncFeatures(ctx, s); err != nil {
				t.Fatal(err)
			}
			got, _ := slurmd.Node("ns-0")
			active := got.ActiveFeatures
			if active == nil {
				active = got.Features
			}
			if !sameSet(got.Features, tt.want) || !sameSet(active, tt.want) {
				t.Errorf("features %v, active %v; want %v", got.Features, active, tt.want)
			}
			if writes := len(slurmd.Updates()); writes != tt.wantWrites {
				t.Errorf("%d updates, want %d", writes, tt.wantWrites)
			}
			if !slices.IsSorted(got.Features) && tt.wantWrites > 0 {
				t.Errorf("features %v not sorted", got.Features)
			}
		})
	}
}

func ptrTo(s string) *string { return &s }
