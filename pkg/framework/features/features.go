package features

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

// Gate is one process's set of feature gates.
type Gate struct {
	mutable featuregate.MutableFeatureGate
}

// New returns a gate that knows only component-base's built-in AllAlpha and
// AllBeta switches.
func New() *Gate {
	return &Gate{mutable: featuregate.NewFeatureGate()}
}

// Register adds a workload's gates. owner names the workload in the error
// when a gate is registered twice with different specs or registration is
// already closed. Specs carry no version: Gantry has no emulation version,
// so each gate has exactly one spec.
func (g *Gate) Register(owner string, specs map[featuregate.Feature]featuregate.FeatureSpec) error {
	if err := g.mutable.Add(specs); err != nil {
		return fmt.Errorf("registering feature gates of %s: %w", owner, err)
	}
	return nil
}

// AddFlag binds --feature-gates on fs. Register must not be called afterwards.
func (g *Gate) AddFlag(fs *pflag.FlagSet) {
	g.mutable.AddFlag(fs)
}

// Set applies "A=true,B=false", the --feature-gates syntax; tests and config
// files use it.
func (g *Gate) Set(value string) error {
	return g.mutable.Set(value)
}

// Enabled reports whether f is on.
func (g *Gate) Enabled(f featuregate.Feature) bool {
	return g.mutable.Enabled(f)
}

// Reader is the read-only view handed to reconcilers.
func (g *Gate) Reader() featuregate.FeatureGate {
	return g.mutable
}

// String lists the gates that were set explicitly, for the start-up log.
func (g *Gate) String() string {
	return fmt.Sprint(g.mutable)
}
