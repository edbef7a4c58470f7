package trainjob

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gantry-dev/gantry/pkg/runtime"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// TestResolveRuntimeLooksPastAStaleCache guards against failing a job for
// good because the runtime, created just before it, is not cached yet.
func TestResolveRuntimeLooksPastAStaleCache(t *testing.T) {
	// The manager's scheme: the runtimes, and the core types (the
	// snapshot ConfigMap is looked for in the cache).
	scheme := snapshotTestScheme(t)
	ctr := trainertesting.MakeClusterTrainingRuntime("runtime").Spec(torchRuntimeSpec()).Obj()
	empty := func() client.Client { return fake.NewClientBuilder().WithScheme(scheme).Build() }
	withRuntime := func() client.Client { return fake.NewClientBuilder().WithScheme(scheme).WithObjects(ctr).Build() }
	cases := []struct {
		name         string
		cache        client.Client
		apiReader    client.Reader
		wantNotFound bool
	}{
		{"cached", withRuntime(), nil, false},
		{"not cached yet but on the server", empty(), withRuntime(), false},
		{"missing everywhere", empty(), empty(), true},
		{"missing from the cache, no API reader", empty(), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{client: tc.cache, apiReader: tc.apiReader}
			s := &scope{}
			s.Object = trainertesting.MakeTrainJob("tj", "default").Obj()
			err := r.resolveRuntime(context.Background(), s)
			spec := s.spec
			if got := runtime.IsRuntimeNotFound(err); got != tc.wantNotFound {
				t.Fatalf("IsRuntimeNotFound = %v (err %v), want %v", got, err, tc.wantNotFound)
			}
			if !tc.wantNotFound && (err != nil || spec == nil || spec.MLPolicy == nil || spec.MLPolicy.Torch == nil) {
				t.Errorf("resolveRuntime() = %v, %v; want the torch runtime's spec", spec, err)
			}
		})
	}
}

func TestResourcesFailedMessageAsTrainer(t *testing.T) {
	if got := resourcesFailedMessage("quota"); got != "TrainJob resources reconciliation failed: quota" {
		t.Errorf("short: %q", got)
	}
	long := strings.Repeat("x", 1000)
	got := resourcesFailedMessage(long)
	if want := "TrainJob resources reconciliation failed: " + long[:950] + " ..."; got != want || len(got) > 1024 {
		t.Errorf("long: %d characters, %q...", len(got), got[:60])
	}
}
