package app

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/onsi/gomega"
)

// seenPods is a reconciler of Pods that records which pods reached it
// through the manager's cache.
type seenPods struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]bool
}

func (s *seenPods) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[req.NamespacedName] = true
	return reconcile.Result{}, nil
}

func (s *seenPods) has(nn types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[nn]
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(timeout).WithPolling(100*time.Millisecond).
		Should(gomega.BeTrue(), "timed out waiting for %s", what)
}

func pod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// TestRunServesProbesFiltersCacheAndStops starts the real manager against a
// real API server with one test workload and checks the start-up contract:
// readyz turns 200, the Pod cache only holds Gantry-managed pods in the
// watched namespaces, and cancelling the context stops the manager cleanly.
func TestRunServesProbesFiltersCacheAndStops(t *testing.T) {
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	ctx := context.Background()
	for _, ns := range []string{"watched", "ignored"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	seen := &seenPods{seen: map[types.NamespacedName]bool{}}
	var cached client.Reader
	reg := &workload.Registry{}
	reg.MustRegister(workload.Integration{
		Name: "podwatcher",
		Setup: func(_ context.Context, mgr ctrl.Manager, _ workload.Options) error {
			cached = mgr.GetCache()
			return ctrl.NewControllerManagedBy(mgr).Named("podwatcher").For(&corev1.Pod{}).Complete(seen)
		},
	})
	reg.MustRegister(workload.Integration{
		Name: "broken",
		Setup: func(context.Context, ctrl.Manager, workload.Options) error {
			return fmt.Errorf("must not be set up: not selected")
		},
	})

	probe, pprof := testenv.FreeAddr(t), testenv.FreeAddr(t)
	opts, err := ParseFlags([]string{
		"--controllers=podwatcher", "--namespaces=watched",
		"--metrics-bind-address=0", "--health-probe-bind-address=" + probe, "--webhook-port=0",
		"--pprof-bind-address=" + pprof,
	}, reg)
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, env.Config, opts, reg) }()
	t.Cleanup(cancel)

	waitFor(t, "/readyz to return 200", time.Minute, func() bool {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	resp, err := http.Get("http://" + probe + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp, err = http.Get("http://" + pprof + "/debug/pprof/heap?debug=1")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("--pprof-bind-address: GET /debug/pprof/heap: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	_ = resp.Body.Close()

	managed := map[string]string{builder.LabelManagedBy: builder.ManagedByGantry}
	pods := []*corev1.Pod{
		pod("watched", "managed", managed),
		pod("watched", "foreign", map[string]string{builder.LabelManagedBy: "someone-else"}),
		pod("watched", "unlabelled", nil),
		pod("ignored", "managed", managed),
	}
	for _, p := range pods {
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	want := types.NamespacedName{Namespace: "watched", Name: "managed"}
	waitFor(t, "the managed pod to reach the reconciler", time.Minute, func() bool { return seen.has(want) })

	// Events are delivered in order per informer, so once a later managed pod
	// arrives the earlier unmanaged ones would have arrived too if they passed
	// the filter.
	sentinel := pod("watched", "managed-late", managed)
	if err := env.Client.Create(ctx, sentinel); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the late managed pod", time.Minute, func() bool {
		return seen.has(types.NamespacedName{Namespace: "watched", Name: "managed-late"})
	})
	for _, nn := range []types.NamespacedName{{Namespace: "watched", Name: "foreign"}, {Namespace: "watched", Name: "unlabelled"}, {Namespace: "ignored", Name: "managed"}} {
		if seen.has(nn) {
			t.Errorf("pod %s passed the cache filter; only Gantry-managed pods in watched namespaces should", nn)
		}
	}

	// Secrets and ConfigMaps are cached only when Gantry manages them (a
	// user's referenced ones are watched by name, package refwatch); a
	// user's ConfigMap created before one of Gantry's is not in the cache
	// once Gantry's is.
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "watched", Name: "user-cm"}, Data: map[string]string{"k": "v"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "watched", Name: "gantry-cm", Labels: managed}, Data: map[string]string{"k": "v"}},
	} {
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{}
	waitFor(t, "Gantry's ConfigMap in the cache", time.Minute, func() bool {
		return cached.Get(ctx, types.NamespacedName{Namespace: "watched", Name: "gantry-cm"}, cm) == nil
	})
	if cm.Data["k"] != "v" {
		t.Errorf("Gantry's cached ConfigMap has data %v; want it whole", cm.Data)
	}
	if err := cached.Get(ctx, types.NamespacedName{Namespace: "watched", Name: "user-cm"}, cm); !apierrors.IsNotFound(err) {
		t.Errorf("a user's ConfigMap read from the cache: %v; want NotFound (only Gantry's are cached)", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancellation, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("manager did not stop within a minute of cancellation")
	}
}

func TestRunRejectsUnknownController(t *testing.T) {
	reg := testRegistry(t)
	o, err := ParseFlags([]string{"--webhook-port=0"}, reg)
	if err != nil {
		t.Fatal(err)
	}
	o.Controllers = []string{"nope"}
	if err := Run(context.Background(), nil, o, reg); err == nil {
		t.Fatal("Run accepted an unknown controller")
	}
}
