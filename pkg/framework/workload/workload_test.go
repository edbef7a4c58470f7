package workload

import (
	"context"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
)

func noopSetup(context.Context, ctrl.Manager, Options) error { return nil }

func testRegistry(t *testing.T, names ...string) *Registry {
	t.Helper()
	r := &Registry{}
	for _, n := range names {
		if err := r.Register(Integration{Name: n, Setup: noopSetup}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestRegisterRejectsBadIntegrations(t *testing.T) {
	cases := map[string]Integration{
		"empty name":     {Setup: noopSetup},
		"upper case":     {Name: "Ray", Setup: noopSetup},
		"comma in name":  {Name: "a,b", Setup: noopSetup},
		"no setup":       {Name: "ray"},
		"duplicate name": {Name: "raycluster", Setup: noopSetup},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			r := testRegistry(t, "raycluster")
			if err := r.Register(in); err == nil {
				t.Fatalf("Register(%+v) succeeded, want error", in)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	r := testRegistry(t, "raycluster", "trainjob", "slurm")
	cases := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: nil, want: "raycluster,trainjob,slurm"},
		{args: []string{"all"}, want: "raycluster,trainjob,slurm"},
		{args: []string{" slurm", "raycluster "}, want: "raycluster,slurm"},
		{args: []string{"trainjob", "trainjob"}, want: "trainjob"},
		{args: []string{"raycluster", "kuberay", "mpijob"}, wantErr: "unknown controller(s) kuberay, mpijob in --controllers (available: raycluster, trainjob, slurm)"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, "+"), func(t *testing.T) {
			got, err := r.Select(tc.args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Select(%q) error = %v, want %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, in := range got {
				names = append(names, in.Name)
			}
			if strings.Join(names, ",") != tc.want {
				t.Fatalf("Select(%q) = %v, want %s", tc.args, names, tc.want)
			}
		})
	}
}

func TestSelectOnEmptyRegistrySaysSo(t *testing.T) {
	_, err := (&Registry{}).Select([]string{"raycluster"})
	if err == nil || !strings.Contains(err.Error(), "none are built into this binary") {
		t.Fatalf("got %v", err)
	}
}

// An integration's DefaultWorkers applies only when no worker count is
// given, and "unset" means one worker.
func TestSetupWithManagerAppliesDefaultWorkers(t *testing.T) {
	cases := []struct {
		name          string
		defaultWorker int
		given, want   int
	}{
		{name: "integration default", defaultWorker: 5, given: 0, want: 5},
		{name: "given count wins", defaultWorker: 5, given: 2, want: 2},
		{name: "no default", defaultWorker: 0, given: 0, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := -1
			in := Integration{Name: "x", DefaultWorkers: tc.defaultWorker, Setup: func(_ context.Context, _ ctrl.Manager, o Options) error {
				got = o.Workers()
				return nil
			}}
			if err := in.SetupWithManager(context.Background(), nil, Options{MaxConcurrentReconciles: tc.given}); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Setup saw %d workers, want %d", got, tc.want)
			}
		})
	}
}

func TestRegistryDescribesDefaultWorkers(t *testing.T) {
	r := &Registry{}
	r.MustRegister(Integration{Name: "raycluster", Setup: noopSetup})
	r.MustRegister(Integration{Name: "trainjob", DefaultWorkers: 5, Setup: noopSetup})
	if got, want := r.DefaultWorkers(), "raycluster 1, trainjob 5"; got != want {
		t.Fatalf("DefaultWorkers() = %q, want %q", got, want)
	}
}

// A family's --workers count wins over --max-concurrent-reconciles, which
// wins over the integration's DefaultWorkers; Setup sees the resolved
// count and no per-family map.
func TestSetupWithManagerAppliesIntegrationWorkers(t *testing.T) {
	cases := []struct {
		name     string
		defaults int
		opts     Options
		want     int
	}{
		{name: "family count", defaults: 5, opts: Options{IntegrationWorkers: map[string]int{"x": 3}}, want: 3},
		{name: "family count over the global one", defaults: 5, opts: Options{MaxConcurrentReconciles: 2, IntegrationWorkers: map[string]int{"x": 7}}, want: 7},
		{name: "another family named", defaults: 5, opts: Options{MaxConcurrentReconciles: 2, IntegrationWorkers: map[string]int{"y": 7}}, want: 2},
		{name: "another family named, no global", defaults: 5, opts: Options{IntegrationWorkers: map[string]int{"y": 7}}, want: 5},
		{name: "zero entry is unset", defaults: 0, opts: Options{IntegrationWorkers: map[string]int{"x": 0}}, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got int
			var sawMap bool
			in := Integration{Name: "x", DefaultWorkers: tc.defaults, Setup: func(_ context.Context, _ ctrl.Manager, o Options) error {
				got, sawMap = o.Workers(), o.IntegrationWorkers != nil
				return nil
			}}
			if w := in.Workers(tc.opts); w != tc.want {
				t.Errorf("Workers() = %d, want %d", w, tc.want)
			}
			if err := in.SetupWithManager(context.Background(), nil, tc.opts); err != nil {
				t.Fatal(err)
			}
			if got != tc.want || sawMap {
				t.Fatalf("Setup saw %d workers (per-family map passed on: %v), want %d", got, sawMap, tc.want)
			}
		})
	}
}

func TestCheckWorkers(t *testing.T) {
	r := testRegistry(t, "raycluster", "trainjob", "slurm")
	for _, tc := range []struct {
		workers map[string]int
		wantErr string
	}{
		{workers: nil},
		{workers: map[string]int{"raycluster": 4, "slurm": 1}},
		{workers: map[string]int{"rayjob": 2, "raycluster": 4, "all": 3}, wantErr: "unknown controller(s) all, rayjob in --workers (available: raycluster, trainjob, slurm)"},
		{workers: map[string]int{"trainjob": 0}, wantErr: "--workers: trainjob=0: a worker count must be at least 1"},
		{workers: map[string]int{"slurm": -2}, wantErr: "--workers: slurm=-2: a worker count must be at least 1"},
	} {
		err := r.CheckWorkers(tc.workers)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("CheckWorkers(%v) = %v", tc.workers, err)
		case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("CheckWorkers(%v) = %v, want %q", tc.workers, err, tc.wantErr)
		}
	}
}
