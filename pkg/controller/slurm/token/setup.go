package token

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
)

// SetupWithManager registers r and its watches: the Token and the Secret
// it owns (metadata only: the manager caches no Secret data).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return core.Setup(mgr, Name, &slinkyv1beta1.Token{}, r, r.Workers, watches)
}

func watches(b *builder.Builder, _ client.Reader) *builder.Builder {
	return b.Owns(&corev1.Secret{}, builder.OnlyMetadata)
}
