package accounting

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/framework/mapping"
)

// Options tune SetupWithManager.
type Options = core.Options[common.Images]

// SetupWithManager registers an Accounting reconciler built from the
// manager's client, API reader and event recorder.
func SetupWithManager(mgr ctrl.Manager, opts ...Options) error {
	return NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(Name)).SetupWithManager(mgr, opts...)
}

// SetupWithManager registers r, its watches and the field indexes they use.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts ...Options) error {
	return core.Setup(mgr, Name, &slinkyv1beta1.Accounting{}, r, core.Apply(opts, &r.Images), watches)
}

func newAccountingList() client.ObjectList { return &slinkyv1beta1.AccountingList{} }

// watches are what SetupWithManager watches: the Accounting; the Service,
// StatefulSet and config Secret it owns; the Secrets it reads (keys and
// database password: a new password rewrites slurmdbd.conf and rolls the
// pod) and its JWKS ConfigMap. Secrets are watched as metadata only: a
// change of resourceVersion is all the mapping needs, and the data is read
// on demand.
func watches(b *builder.Builder, cache client.Reader) *builder.Builder {
	return b.Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(mapping.ByIndex(cache, newAccountingList, common.IndexAccountingSecrets)),
			builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(mapping.ByIndex(cache, newAccountingList, common.IndexAccountingConfigMaps)))
}
