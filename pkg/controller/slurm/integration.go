// Package slurm wires the Slinky-compatible Slurm reconcilers — Controller
// (slurmctld), RestApi (slurmrestd) and NodeSet (slurmd pods) — into the
// Gantry manager as the "slurm" workload.
package slurm

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/controller"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/restapi"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	slurmclient "github.com/gantry-dev/gantry/pkg/slurm"
)

// Name is the workload's name in --controllers.
const Name = "slurm"

// Integration registers the three Slurm reconcilers. They share one Slurm
// client registry: the RestApi reconciler publishes a client per
// Controller, the NodeSet reconciler uses it to drain and watch nodes.
func Integration() workload.Integration {
	return workload.Integration{
		Name:        Name,
		AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme},
		Setup:       setup,
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options) error {
	clients := slurmclient.NewRegistry(nil)
	// A published or dropped client changes what the Controller's NodeSets
	// can do (drain before delete); this channel tells them.
	changes := make(chan event.GenericEvent, 128)
	notify := func(c types.NamespacedName) {
		ev := event.GenericEvent{Object: &slinkyv1beta1.Controller{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name}}}
		select {
		case changes <- ev:
		default:
			// The channel is drained by the NodeSet controller once it
			// runs; a full buffer means it is far behind and will list
			// everything anyway.
		}
	}
	if err := controller.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}); err != nil {
		return err
	}
	if err := restapi.SetupWithManager(mgr, restapi.Options{
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles, Clients: clients, OnClientChange: notify,
	}); err != nil {
		return err
	}
	return nodeset.SetupWithManager(mgr, clients, opts.MaxConcurrentReconciles, nodeset.WithClientChanges(changes))
}
