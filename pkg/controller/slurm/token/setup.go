package token

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
	"github.com/gantry-dev/gantry/pkg/framework/referrers"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
)

// SetupWithManager registers r and its watches: the Token, the Secret it
// owns (metadata only: the manager caches no Secret data), and the Secret
// holding its signing key, watched by its name (core.Refs), so a new key
// has every token signed with the old one issued again at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return core.Setup(mgr, Name, &slinkyv1beta1.Token{}, r, r.Workers, watches,
		core.Refs{Kind: &corev1.Secret{}, Holders: []refwatch.Holder{index.Holder(index.TokenSigningKey)}, Map: secretToTokens})
}

func watches(b *builder.Builder, _ client.Reader) *builder.Builder {
	return b.Owns(&corev1.Secret{}, builder.OnlyMetadata)
}

// secretToTokens maps a Secret to the Tokens in its namespace that sign
// with a key from it.
func secretToTokens(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return referrers.Requests(ctx, reader, &slinkyv1beta1.TokenList{},
			client.InNamespace(obj.GetNamespace()), client.MatchingFields{index.TokenSigningKey: obj.GetName()})
	}
}
