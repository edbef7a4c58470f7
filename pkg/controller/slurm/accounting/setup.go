package accounting

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
)

// SetupWithManager registers r and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return core.Setup(mgr, Name, &slinkyv1beta1.Accounting{}, r, r.Workers, watches,
		core.IndexedRefs(&corev1.Secret{}, index.AccountingSecrets, newAccountingList),
		core.IndexedRefs(&corev1.ConfigMap{}, index.AccountingConfigMaps, newAccountingList))
}

func newAccountingList() client.ObjectList { return &slinkyv1beta1.AccountingList{} }

// watches are what SetupWithManager watches: the Accounting; the Service,
// StatefulSet and config Secret it owns. SetupWithManager adds the Secrets
// it reads (keys and database password: a new password rewrites
// slurmdbd.conf and rolls the pod) and its JWKS ConfigMap, each watched by
// its name (core.Refs); their data is read on demand.
func watches(b *builder.Builder, cache client.Reader) *builder.Builder {
	return b.Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Secret{}, builder.OnlyMetadata)
}
