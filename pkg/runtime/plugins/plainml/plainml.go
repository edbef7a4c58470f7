package plainml

import (
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "PlainML"

// PlainML implements plugin.EnforceMLPolicyPlugin.
type PlainML struct{}

var _ plugin.EnforceMLPolicyPlugin = PlainML{}

// Name implements plugin.Plugin.
func (PlainML) Name() string { return Name }

// EnforceMLPolicy applies numNodes and env when no framework policy is set.
func (PlainML) EnforceMLPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if hasFrameworkPolicy(info.MLPolicy) {
		return nil
	}
	plugin.ApplyTrainerCountAndEnv(info, trainJob)
	return nil
}

func hasFrameworkPolicy(p *trainer.MLPolicy) bool {
	if p == nil {
		return false
	}
	s := p.MLPolicySource
	return s.Torch != nil || s.MPI != nil || s.JAX != nil || s.XGBoost != nil || s.Flux != nil
}
