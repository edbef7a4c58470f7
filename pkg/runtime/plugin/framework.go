package plugin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// Framework runs plugins at each extension point in the order they were
// given to New. Upstream Trainer keeps plugins in a map, so two plugins
// touching the same field could win in either order from one reconcile to
// the next; a slice makes the outcome reproducible.
type Framework struct {
	plugins []Plugin
}

// New returns a Framework over plugins, in that order. Names must be unique.
func New(plugins ...Plugin) (*Framework, error) {
	seen := map[string]bool{}
	for _, p := range plugins {
		if p == nil {
			return nil, fmt.Errorf("nil plugin")
		}
		if seen[p.Name()] {
			return nil, fmt.Errorf("plugin %q registered twice", p.Name())
		}
		seen[p.Name()] = true
	}
	return &Framework{plugins: append([]Plugin(nil), plugins...)}, nil
}

// PluginNames lists the plugins in run order.
func (f *Framework) PluginNames() []string {
	names := make([]string, 0, len(f.plugins))
	for _, p := range f.plugins {
		names = append(names, p.Name())
	}
	return names
}

// RunCustomValidationPlugins collects every validation plugin's errors.
func (f *Framework) RunCustomValidationPlugins(info *Info, oldJob, newJob *trainer.TrainJob) field.ErrorList {
	var errs field.ErrorList
	for _, p := range f.plugins {
		if v, ok := p.(CustomValidationPlugin); ok {
			errs = append(errs, v.Validate(info, oldJob, newJob)...)
		}
	}
	return errs
}

// RunEnforceMLPolicyPlugins stops at the first plugin error.
func (f *Framework) RunEnforceMLPolicyPlugins(info *Info, trainJob *trainer.TrainJob) error {
	for _, p := range f.plugins {
		if e, ok := p.(EnforceMLPolicyPlugin); ok {
			if err := e.EnforceMLPolicy(info, trainJob); err != nil {
				return fmt.Errorf("%s: enforcing the ML policy: %w", p.Name(), err)
			}
		}
	}
	return nil
}

// RunEnforcePodGroupPolicyPlugins stops at the first plugin error.
func (f *Framework) RunEnforcePodGroupPolicyPlugins(info *Info, trainJob *trainer.TrainJob) error {
	for _, p := range f.plugins {
		if e, ok := p.(EnforcePodGroupPolicyPlugin); ok {
			if err := e.EnforcePodGroupPolicy(info, trainJob); err != nil {
				return fmt.Errorf("%s: enforcing the pod group policy: %w", p.Name(), err)
			}
		}
	}
	return nil
}

// RunPodNetworkPlugins stops at the first plugin error.
func (f *Framework) RunPodNetworkPlugins(info *Info, trainJob *trainer.TrainJob) error {
	for _, p := range f.plugins {
		if n, ok := p.(PodNetworkPlugin); ok {
			if err := n.IdentifyPodNetwork(info, trainJob); err != nil {
				return fmt.Errorf("%s: identifying the pod network: %w", p.Name(), err)
			}
		}
	}
	return nil
}

// RunComponentBuilderPlugins concatenates the components in plugin order, so
// objects that pods depend on (Secrets, ConfigMaps, PodGroups) come before
// the JobSet that creates the pods when the builders are ordered that way.
func (f *Framework) RunComponentBuilderPlugins(ctx context.Context, existing client.Reader, info *Info, trainJob *trainer.TrainJob) ([]Component, error) {
	var out []Component
	for _, p := range f.plugins {
		if b, ok := p.(ComponentBuilderPlugin); ok {
			comps, err := b.Build(ctx, existing, info, trainJob)
			if err != nil {
				return nil, fmt.Errorf("%s: building components: %w", p.Name(), err)
			}
			out = append(out, comps...)
		}
	}
	return out, nil
}
