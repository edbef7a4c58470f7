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
