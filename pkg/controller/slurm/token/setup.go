package token

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
)

// SetupWithManager registers a Token reconciler built from the manager's
// client, API reader and event recorder.
//
// Watches: the Token and the Secret it owns (metadata only: the manager
// caches no Secret data).
func SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(Name))
	return core.Setup(mgr, Name, &slinkyv1beta1.Token{}, r, maxConcurrentReconciles, func(b *builder.Builder, _ client.Reader) *builder.Builder {
		return b.Owns(&corev1.Secret{}, builder.OnlyMetadata)
	})
}
