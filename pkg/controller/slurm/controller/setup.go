package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	"github.com/gantry-dev/gantry/pkg/framework/mapping"
)

// Options tune SetupWithManager.
type Options struct {
	// MaxConcurrentReconciles is the number of workers; 0 means one.
	MaxConcurrentReconciles int
	// Images override the default images field by field.
	Images common.Images
}

// SetupWithManager registers a Controller reconciler built from the
// manager's client, API reader and event recorder.
func SetupWithManager(mgr ctrl.Manager, opts ...Options) error {
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(Name))
	return r.SetupWithManager(mgr, opts...)
}

// SetupWithManager registers r, its watches and the field indexes they use.
//
// Watches: the Controller; the Services, ConfigMap and StatefulSet it owns;
// NodeSets (slurm.conf lists them); the Accounting it references
// (slurm.conf points at it once it exists); Secrets holding its keys (the pod
// carries their hashes); ConfigMaps it references (files and scripts).
// Secrets are watched as metadata only: a change of resourceVersion is all
// the mapping needs, and the data is read on demand.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts ...Options) error {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	r.Images = o.Images.Or(r.Images)
	if err := common.RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	cache := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&slinkyv1beta1.Controller{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.StatefulSet{}).
		Watches(&slinkyv1beta1.NodeSet{}, handler.EnqueueRequestsFromMapFunc(nodeSetToController)).
		Watches(&slinkyv1beta1.Accounting{}, handler.EnqueueRequestsFromMapFunc(accountingToControllers(cache))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(mapping.ByIndex(cache, newControllerList, common.IndexControllerSecrets)),
			builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(mapping.ByIndex(cache, newControllerList, common.IndexControllerConfigMaps))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(o.MaxConcurrentReconciles, 1)}).
		Complete(r)
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
