package features

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

const (
	statusConditions featuregate.Feature = "ExampleStatusConditions"
	multiHost        featuregate.Feature = "ExampleMultiHost"
	experimental     featuregate.Feature = "ExampleExperimental"
	graduated        featuregate.Feature = "ExampleGraduated"
)

var exampleSpecs = map[featuregate.Feature]featuregate.FeatureSpec{
	statusConditions: {Default: true, PreRelease: featuregate.Beta},
	multiHost:        {Default: true, PreRelease: featuregate.Beta},
	experimental:     {Default: false, PreRelease: featuregate.Alpha},
	graduated:        {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
}

func newRegisteredGate(t *testing.T) *Gate {
	t.Helper()
	g := New()
	if err := g.Register("example", exampleSpecs); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return g
}

func TestFeatureGateFlag(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		want        map[featuregate.Feature]bool
		wantErrText string
	}{
		{
			name: "defaults",
			args: nil,
			want: map[featuregate.Feature]bool{statusConditions: true, multiHost: true, experimental: false, graduated: true},
		},
		{
			name: "turn a beta gate off and an alpha gate on",
			args: []string{"--feature-gates=ExampleStatusConditions=false,ExampleExperimental=true"},
			want: map[featuregate.Feature]bool{statusConditions: false, multiHost: true, experimental: true, graduated: true},
		},
		{
			name: "AllAlpha switches every alpha gate",
			args: []string{"--feature-gates=AllAlpha=true"},
			want: map[featuregate.Feature]bool{statusConditions: true, multiHost: true, experimental: true, graduated: true},
		},
		{
			name:        "unknown gate is rejected",
			args:        []string{"--feature-gates=NoSuchGate=true"},
			wantErrText: "unrecognized feature gate: NoSuchGate",
		},
		{
			name:        "locked gate cannot be changed",
			args:        []string{"--feature-gates=ExampleGraduated=false"},
			wantErrText: "cannot set feature gate ExampleGraduated to false",
		},
		{
			name:        "value must be a bool",
			args:        []string{"--feature-gates=ExampleMultiHost=maybe"},
			wantErrText: "invalid value of ExampleMultiHost=maybe",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newRegisteredGate(t)
			fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
			g.AddFlag(fs)

			err := fs.Parse(tc.args)
			if tc.wantErrText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
					t.Fatalf("Parse error = %v, want it to contain %q", err, tc.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for f, want := range tc.want {
				if got := g.Enabled(f); got != want {
					t.Errorf("Enabled(%s) = %v, want %v", f, got, want)
				}
				if got := g.Reader().Enabled(f); got != want {
					t.Errorf("Reader().Enabled(%s) = %v, want %v", f, got, want)
				}
			}
		})
	}
}

func TestSet(t *testing.T) {
	g := newRegisteredGate(t)
	if err := g.Set("ExampleMultiHost=false"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if g.Enabled(multiHost) {
		t.Error("ExampleMultiHost should be off after Set")
	}
	if !strings.Contains(g.String(), "ExampleMultiHost=false") {
		t.Errorf("String() = %q, want the explicit setting listed", g.String())
	}
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name        string
		second      map[featuregate.Feature]featuregate.FeatureSpec
		closeFirst  bool
		wantErrText string
	}{
		{
			name:   "another workload adds its own gates",
			second: map[featuregate.Feature]featuregate.FeatureSpec{"OtherWorkloadGate": {Default: false, PreRelease: featuregate.Alpha}},
		},
		{
			name:   "identical re-registration is tolerated",
			second: map[featuregate.Feature]featuregate.FeatureSpec{statusConditions: exampleSpecs[statusConditions]},
		},
		{
			name:        "conflicting spec names the workload",
			second:      map[featuregate.Feature]featuregate.FeatureSpec{statusConditions: {Default: false, PreRelease: featuregate.Alpha}},
			wantErrText: "registering feature gates of second",
		},
		{
			name:        "registration after the flag is bound fails",
			second:      map[featuregate.Feature]featuregate.FeatureSpec{"Late": {Default: false, PreRelease: featuregate.Alpha}},
			closeFirst:  true,
			wantErrText: "cannot add a feature gate after adding it to the flag set",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newRegisteredGate(t)
			if tc.closeFirst {
				g.AddFlag(pflag.NewFlagSet("manager", pflag.ContinueOnError))
			}
			err := g.Register("second", tc.second)
			if tc.wantErrText == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				for f, spec := range tc.second {
					if g.Enabled(f) != spec.Default {
						t.Errorf("Enabled(%s) = %v, want default %v", f, g.Enabled(f), spec.Default)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
				t.Errorf("Register error = %v, want it to contain %q", err, tc.wantErrText)
			}
		})
	}
}

func TestGatesAreIndependentPerProcess(t *testing.T) {
	a, b := newRegisteredGate(t), newRegisteredGate(t)
	if err := a.Set("ExampleExperimental=true"); err != nil {
		t.Fatal(err)
	}
	if b.Enabled(experimental) {
		t.Error("setting one gate leaked into another")
	}
}

func TestEnabledPanicsForUnregisteredGate(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Enabled of an unregistered gate should panic")
		}
	}()
	New().Enabled("NeverRegistered")
}
