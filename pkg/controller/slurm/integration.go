// Package slurm wires the Slinky-compatible Slurm reconcilers — Controller
// (slurmctld), RestApi (slurmrestd) and NodeSet (slurmd pods) — into the
// Gantry manager as the "slurm" workload.
package slurm

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/accounting"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/controller"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/loginset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/restapi"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/token"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Name is the workload's name in --controllers.
const Name = "slurm"

// SlurmrestdURLOverride makes the manager honour a RestApi's
// gantry.dev/slurmrestd-url annotation (slinkyv1beta1.AnnotationSlurmrestdURL):
// for a manager running outside the cluster (`make run`, the e2e tier),
// which cannot resolve the RestApi Service's cluster DNS name. Off by
// default, since anyone who may edit a RestApi could otherwise point the
// manager's Slurm tokens at a server of their choosing.
const SlurmrestdURLOverride featuregate.Feature = "SlurmrestdURLOverride"

// Integration registers the three Slurm reconcilers. The NodeSet reconciler
// finds its Controller's Slurm client itself, from the RestApi and the JWT
// key as they are when it asks.
func Integration() workload.Integration {
	return workload.Integration{
		Name:        Name,
		AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme},
		FeatureGates: map[featuregate.Feature]featuregate.FeatureSpec{
			SlurmrestdURLOverride: {Default: false, PreRelease: featuregate.Alpha},
		},
		Setup: setup,
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
	if err := controller.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}); err != nil {
		return err
	}
	if err := restapi.SetupWithManager(mgr, restapi.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}); err != nil {
		return err
	}
	if err := accounting.SetupWithManager(mgr, accounting.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}); err != nil {
		return err
	}
	clients := restapi.NewClientResolver(mgr.GetClient(), mgr.GetAPIReader(), restapi.ResolverOptions{
		AllowEndpointOverride: opts.Features != nil && opts.Features.Enabled(SlurmrestdURLOverride),
	})
	if err := nodeset.SetupWithManager(mgr, clients, opts.MaxConcurrentReconciles); err != nil {
		return err
	}
	if err := loginset.SetupWithManager(mgr, loginset.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}); err != nil {
		return err
	}
	return token.SetupWithManager(mgr, opts.MaxConcurrentReconciles)
}
