package accounting

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

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

// SetupWithManager registers an Accounting reconciler built from the
// manager's client, API reader and event recorder.
func SetupWithManager(mgr ctrl.Manager, opts ...Options) error {
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(Name))
	return r.SetupWithManager(mgr, opts...)
}

// SetupWithManager registers r, its watches and the field indexes they use.
//
// Watches: the Accounting; the Service, StatefulSet and config Secret it
// owns; the Secrets it reads (keys and database password: a new password
// rewrites slurmdbd.conf and rolls the pod) and its JWKS ConfigMap. Secrets
// are watched as metadata only: a change of resourceVersion is all the
// mapping needs, and the data is read on demand.
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
		For(&slinkyv1beta1.Accounting{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(mapping.ByIndex(cache, newAccountingList, common.IndexAccountingSecrets)),
			builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(mapping.ByIndex(cache, newAccountingList, common.IndexAccountingConfigMaps))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(o.MaxConcurrentReconciles, 1)}).
		Complete(r)
}

func newAccountingList() client.ObjectList { return &slinkyv1beta1.AccountingList{} }
