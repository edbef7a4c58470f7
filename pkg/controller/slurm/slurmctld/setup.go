package slurmctld

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
)

// SetupWithManager registers r and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return core.Setup(mgr, Name, &slinkyv1beta1.Controller{}, r, r.Workers, watches,
		core.IndexedRefs(&corev1.Secret{}, index.ControllerSecrets, newControllerList),
		core.IndexedRefs(&corev1.ConfigMap{}, index.ControllerConfigMaps, newControllerList))
}

func nodeSetToController(_ context.Context, obj client.Object) []reconcile.Request {
	n, ok := obj.(*slinkyv1beta1.NodeSet)
	if !ok || n.Spec.ControllerRef.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: n.ControllerKey()}}
}

// accountingToControllers maps an Accounting to the Controllers in its
// namespace whose accountingRef names it (a short list, from the cache).
func accountingToControllers(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &slinkyv1beta1.ControllerList{}
		if err := reader.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			log.FromContext(ctx).Error(err, "listing Controllers referencing an Accounting", "accounting", client.ObjectKeyFromObject(obj))
			return nil
		}
		var reqs []reconcile.Request
		for _, c := range list.Items {
			if ref := c.Spec.AccountingRef; ref != nil && ref.Name == obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
			}
		}
		return reqs
	}
}

func newControllerList() client.ObjectList { return &slinkyv1beta1.ControllerList{} }

// watches are what SetupWithManager watches: the Controller; the Services,
// ConfigMap and StatefulSet it owns; NodeSets (slurm.conf lists them); the
// Accounting it references (slurm.conf points at it once it exists).
// SetupWithManager adds the Secrets holding its keys (the pod carries their
// hashes) and the ConfigMaps it references (files and scripts), each
// watched by its name (core.Refs); their data is read on demand.
func watches(b *builder.Builder, cache client.Reader) *builder.Builder {
	return b.Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.StatefulSet{}).
		Watches(&slinkyv1beta1.NodeSet{}, handler.EnqueueRequestsFromMapFunc(nodeSetToController)).
		Watches(&slinkyv1beta1.Accounting{}, handler.EnqueueRequestsFromMapFunc(accountingToControllers(cache)))
}
