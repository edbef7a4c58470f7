package status

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestCoalescerHoldsUntilTheWindowOfTheFirstChangeEnds(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0.Time)
	c := NewCoalescer(2*time.Second, clk)
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}

	steps := []struct {
		after time.Duration // clock moves by this before the call
		key   types.NamespacedName
		close bool // Close instead of Hold
		want  time.Duration
	}{
		{key: a, want: 2 * time.Second},                                        // a's first change opens its window
		{after: 500 * time.Millisecond, key: a, want: 1500 * time.Millisecond}, // a later one waits for its end, not a new window
		{key: b, want: 2 * time.Second},                                        // b has its own window
		{after: 1500 * time.Millisecond, key: a, want: 0},                      // a's window is over: write now
		{after: time.Hour, key: a, want: 0},                                    // and stays over until closed
		{key: a, close: true},
		{key: a, want: 2 * time.Second}, // a change after the write opens a new window
		{key: b, want: 0},
	}
	for i, s := range steps {
		clk.SetTime(clk.Now().Add(s.after))
		if s.close {
			c.Close(s.key)
			continue
		}
		if got := c.Hold(s.key); got != s.want {
			t.Errorf("step %d: Hold(%s) = %v, want %v", i, s.key.Name, got, s.want)
		}
	}

	var none *Coalescer
	if got := none.Hold(a); got != 0 {
		t.Errorf("a nil Coalescer holds for %v", got)
	}
	none.Close(a)
	if got := NewCoalescer(0, nil).Hold(a); got != 0 {
		t.Errorf("a Coalescer without a window holds for %v", got)
	}
}

func TestUpdateWithHold(t *testing.T) {
	setRunning := func(p *corev1.Pod) error { p.Status.Phase = corev1.PodRunning; return nil }
	for _, tc := range []struct {
		name        string
		mutate      func(*corev1.Pod) error
		hold        time.Duration
		wantAsked   int
		wantUpdates int
	}{
		{name: "a held change is not written", mutate: setRunning, hold: time.Second, wantAsked: 1},
		{name: "a change not held is written", mutate: setRunning, wantAsked: 1, wantUpdates: 1},
		{name: "no change: hold is not asked", mutate: func(*corev1.Pod) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updates := 0
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod()).WithStatusSubresource(&corev1.Pod{}).
				WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					updates++
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				}}).Build()
			obj := &corev1.Pod{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod()), obj); err != nil {
				t.Fatal(err)
			}
			asked := 0
			changed, err := Update(context.Background(), c, obj, tc.mutate, WithHold(func(old, updated *corev1.Pod) time.Duration {
				asked++
				if old.Status.Phase == updated.Status.Phase {
					t.Errorf("hold asked about an unchanged status")
				}
				return tc.hold
			}))
			if err != nil {
				t.Fatal(err)
			}
			if asked != tc.wantAsked || updates != tc.wantUpdates || changed != (tc.wantUpdates > 0) {
				t.Errorf("hold asked %d times, %d writes, changed %v; want %d, %d", asked, updates, changed, tc.wantAsked, tc.wantUpdates)
			}
			if held := tc.wantUpdates == 0; held && obj.Status.Phase != corev1.PodPending {
				t.Errorf("the caller's object shows %s, which was not written", obj.Status.Phase)
			}
		})
	}
}
