// Package slurm wires the Slinky-compatible Slurm reconcilers — Controller
// (slurmctld), RestApi (slurmrestd), Accounting (slurmdbd), NodeSet (slurmd
// pods), LoginSet and Token — into the Gantry manager as the "slurm"
// workload.
package slurm

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/accounting"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/loginset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/restapi"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/token"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Name is the workload's name in --controllers.
const Name = "slurm"

// Integration registers the Slurm reconcilers. The NodeSet reconciler
// finds its Controller's Slurm client itself, from the RestApi and the JWT
// key as they are when it asks.
func Integration() workload.Integration {
	return workload.Integration{
		Name:         Name,
		AddToScheme:  []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme},
		FeatureGates: FeatureGates(),
		SetupIndexes: setupIndexes,
		Setup:        setup,
	}
}

// setupIndexes registers the field indexes the Slurm watches map through:
// those the reconcilers share, then the LoginSet's and the NodeSet's own.
func setupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, register := range []func(context.Context, client.FieldIndexer) error{
		index.Register, loginset.RegisterIndexes, nodeset.RegisterIndexes,
	} {
		if err := register(ctx, indexer); err != nil {
			return err
		}
	}
	return nil
}

// reconciler is what each kind's New returns.
type reconciler interface {
	SetupWithManager(mgr ctrl.Manager) error
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
	metrics, err := slurmmetrics.New(opts.RegistererOrDefault())
	if err != nil {
		return err
	}
	secrets, err := refwatch.For(mgr, &corev1.Secret{})
	if err != nil {
		return err
	}
	clients := restapi.NewClientResolver(mgr.GetClient(), mgr.GetAPIReader(), restapi.ResolverOptions{
		AllowEndpointOverride: opts.Features != nil && opts.Features.Enabled(SlurmrestdURLOverride),
		Metrics:               metrics,
		SecretVersions:        secrets,
	})
	for _, build := range []func() (reconciler, error){
		func() (reconciler, error) {
			return slurmctld.New(mgr, slurmctld.Options{Options: opts, Metrics: metrics})
		},
		func() (reconciler, error) { return restapi.New(mgr, restapi.Options{Options: opts}) },
		func() (reconciler, error) { return accounting.New(mgr, accounting.Options{Options: opts}) },
		func() (reconciler, error) {
			return nodeset.New(mgr, nodeset.Options{Options: opts, Clients: clients, Metrics: metrics,
				PropagatedNodeConditions: opts.SlurmPropagatedNodeConditions})
		},
		func() (reconciler, error) { return loginset.New(mgr, loginset.Options{Options: opts}) },
		func() (reconciler, error) { return token.New(mgr, token.Options{Options: opts}) },
	} {
		r, err := build()
		if err != nil {
			return err
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}
