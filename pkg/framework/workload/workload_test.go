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
