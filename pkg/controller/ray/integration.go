// Package ray registers the Ray family with the manager: the RayCluster,
// RayJob and RayService controllers, run together under
// --controllers=raycluster, as KubeRay's one operator runs them.
package ray

import (
	"context"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gantry-dev/gantry/pkg/controller/ray/dashboards"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/controller/ray/rayjob"
	"github.com/gantry-dev/gantry/pkg/controller/ray/rayservice"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Flags are the Ray family's flags: the RayCluster controller's and
// KubeRay's --use-kubernetes-proxy.
type Flags struct {
	raycluster.Flags
	// UseKubernetesProxy reaches Ray dashboards through the API server's
	// services/proxy subresource instead of the head Service's DNS name,
	// for a manager that cannot reach Pods directly.
	UseKubernetesProxy bool
}

// NewFlags are the flags at their defaults.
func NewFlags() *Flags { return &Flags{Flags: *raycluster.NewFlags()} }

// AddFlags registers the family's flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	f.Flags.AddFlags(fs)
	fs.BoolVar(&f.UseKubernetesProxy, "use-kubernetes-proxy", false,
		"Reach Ray dashboards through the API server's services/proxy subresource (KubeRay's flag), for a manager that cannot reach Pods directly.")
}

// Integration registers the Ray family with its flags at their defaults.
func Integration() workload.Integration { return IntegrationWith(NewFlags()) }

// IntegrationWith is Integration with the flags f.
func IntegrationWith(f *Flags) workload.Integration {
	in := raycluster.IntegrationWith(&f.Flags)
	in.Flags = f
	in.Setup = func(ctx context.Context, mgr ctrl.Manager, opts workload.Options) error {
		clusterCfg, err := raycluster.Setup(ctx, mgr, opts, &f.Flags)
		if err != nil {
			return err
		}
		cfg := rayjob.ConfigFromEnv(os.Getenv)
		cfg.Build = clusterCfg.Build
		dash := &dashboards.Clients{Secrets: mgr.GetAPIReader()}
		if opts.Features != nil {
			cfg.DeletionPolicy = opts.Features.Enabled(features.RayJobDeletionPolicy)
			cfg.SidecarSubmitterRestart = opts.Features.Enabled(features.SidecarSubmitterRestart)
			dash.AllowOverride = opts.Features.Enabled(features.RayDashboardURLOverride)
		}
		cfg.Validation = validation.RayJobValidationOptionsFromGates(opts.Features)
		if f.UseKubernetesProxy {
			dash.ProxyHost = mgr.GetConfig().Host
			dash.ProxyTransport = mgr.GetHTTPClient().Transport
		}
		r, err := rayjob.New(mgr, rayjob.Options{Options: opts, Config: cfg, Dashboards: dash})
		if err != nil {
			return err
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
		svcCfg := rayservice.ConfigFromEnv(os.Getenv)
		svcCfg.Build = clusterCfg.Build
		svcCfg.Validation = validation.RayServiceValidationOptionsFromGates(opts.Features)
		rs, err := rayservice.New(mgr, rayservice.Options{Options: opts, Config: svcCfg, Dashboards: dash})
		if err != nil {
			return err
		}
		return rs.SetupWithManager(mgr)
	}
	return in
}
