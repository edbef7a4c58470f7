// Package managertest runs a controller-runtime manager configured as the
// Gantry manager is (its label-filtered caches) against a test control
// plane, for integration tests that set up reconcilers themselves.
//
// It is apart from package testenv because it imports cmd/manager/app,
// which imports the framework packages whose own tests use testenv.
package managertest

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
)

// New returns a manager for env with the Gantry manager's own cache
// options (label-filtered caches, and the cache trims of ins, the
// integrations under test), not started. Start is what a test usually
// wants; New is for a harness shared by a package's tests.
func New(env *testenv.Env, ins ...workload.Integration) (ctrl.Manager, error) {
	cacheOpts, err := app.CacheOptions(ins, nil)
	if err != nil {
		return nil, err
	}
	return ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cacheOpts,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
}

// Start runs a manager made by New, lets setup register reconcilers (and
// the field indexes they use), and stops it when the test ends, failing
// the test when the manager stopped with an error.
func Start(t *testing.T, env *testenv.Env, setup func(ctrl.Manager) error, ins ...workload.Integration) ctrl.Manager {
	t.Helper()
	mgr, err := New(env, ins...)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return mgr
}
