package loginset

import (
	"context"
	"slices"
	"strings"

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
	"github.com/gantry-dev/gantry/pkg/framework/referrers"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
)

// Field indexes behind the mapped watches.
const (
	// IndexController maps a LoginSet to its Controller's name (same
	// namespace).
	IndexController = "slinky.loginset.controllerRef"
	// IndexSecrets maps a LoginSet to the Secrets it reads itself: its
	// sssd.conf and its host keys (same namespace).
	IndexSecrets = "slinky.loginset.secretRefs"
)

// SetupWithManager registers r and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return core.Setup(mgr, Name, &slinkyv1beta1.LoginSet{}, r, r.Workers, watches,
		core.Refs{Kind: &corev1.Secret{}, Map: secretToLoginSets, Holders: []refwatch.Holder{
			{Object: &slinkyv1beta1.LoginSet{}, Names: func(o client.Object) []string { return secretNames(o.(*slinkyv1beta1.LoginSet)) }},
			index.Holder(index.ControllerSecrets),
		}})
}

// secretNames are the Secrets l reads itself.
func secretNames(l *slinkyv1beta1.LoginSet) []string {
	names := []string{HostKeysSecretName(l)}
	if n := l.Spec.SssdConfRef.Name; n != "" && n != names[0] {
		names = append(names, n)
	}
	return names
}

// RegisterIndexes adds the LoginSet field indexes behind the watches to
// indexer (the manager's). The slurm Integration registers them once,
// before the reconciler is set up.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for field, fn := range map[string]client.IndexerFunc{
		IndexController: func(o client.Object) []string {
			return []string{o.(*slinkyv1beta1.LoginSet).Spec.ControllerRef.Name}
		},
		IndexSecrets: func(o client.Object) []string { return secretNames(o.(*slinkyv1beta1.LoginSet)) },
	} {
		if err := indexer.IndexField(ctx, &slinkyv1beta1.LoginSet{}, field, fn); err != nil {
			return err
		}
	}
	return nil
}

func loginSetsOf(ctx context.Context, reader client.Reader, namespace, controller string) []reconcile.Request {
	return listRequests(ctx, reader, namespace, client.MatchingFields{IndexController: controller})
}

func listRequests(ctx context.Context, reader client.Reader, namespace string, fields client.MatchingFields) []reconcile.Request {
	return referrers.Requests(ctx, reader, &slinkyv1beta1.LoginSetList{}, client.InNamespace(namespace), fields)
}

// secretToLoginSets maps a Secret to the LoginSets that read it: by their
// own references, and through every Controller in its namespace that takes
// a key from it.
func secretToLoginSets(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		reqs := listRequests(ctx, reader, obj.GetNamespace(), client.MatchingFields{IndexSecrets: obj.GetName()})
		controllers := &slinkyv1beta1.ControllerList{}
		if err := reader.List(ctx, controllers, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{index.ControllerSecrets: obj.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "listing Controllers using a Secret", "secret", client.ObjectKeyFromObject(obj))
			return reqs
		}
		for _, c := range controllers.Items {
			reqs = append(reqs, loginSetsOf(ctx, reader, c.Namespace, c.Name)...)
		}
		slices.SortFunc(reqs, func(a, b reconcile.Request) int { return strings.Compare(a.String(), b.String()) })
		return slices.Compact(reqs)
	}
}

// watches are what SetupWithManager watches: the LoginSet; the Deployment,
// Service and ConfigMap it owns; its Controller (the pods reach its
// slurmctld and carry its key's hash); Secrets, as metadata only (the data
// is read on demand): its sssd.conf, its host keys, and the Controller's
// keys.
func watches(b *builder.Builder, cache client.Reader) *builder.Builder {
	return b.Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&slinkyv1beta1.Controller{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
			return loginSetsOf(ctx, cache, obj.GetNamespace(), obj.GetName())
		}))
}
