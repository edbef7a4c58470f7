package slurm

import (
	"context"
	"strings"

	"github.com/spf13/pflag"
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
func Integration() workload.Integration { return IntegrationWith(&Flags{}) }

// IntegrationWith is Integration with the flags f.
func IntegrationWith(f *Flags) workload.Integration {
	return workload.Integration{
		Name:         Name,
		AddToScheme:  []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme},
		FeatureGates: FeatureGates(),
		SetupIndexes: setupIndexes,
		Flags:        f,
		Setup: func(ctx context.Context, mgr ctrl.Manager, opts workload.Options) error {
			return setup(ctx, mgr, opts, f)
		},
	}
}

// Flags are the Slurm reconcilers' own flags.
type Flags struct {
	// PropagatedNodeConditions is Slinky's --propagated-node-conditions:
	// the Kubernetes Node condition types whose reasons and messages
	// become the drain reason of a cordoned Node's Slurm nodes.
	PropagatedNodeConditions []string
}

// AddFlags registers --propagated-node-conditions.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.PropagatedNodeConditions, "propagated-node-conditions", nil,
		"Comma-separated Kubernetes Node condition types (e.g. KernelDeadlock,DiskPressure) whose reason and message, when True, become the drain reason of the Slurm nodes of a cordoned Node's slurmd pods (as Slinky's flag).")
}

// Complete trims each condition type and drops the empty ones, as Slinky
// reads its comma-separated list.
func (f *Flags) Complete() error {
	var out []string
	for _, item := range f.PropagatedNodeConditions {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	f.PropagatedNodeConditions = out
	return nil
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

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options, f *Flags) error {
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
				PropagatedNodeConditions: f.PropagatedNodeConditions})
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
