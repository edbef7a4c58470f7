package restapi

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
	"github.com/gantry-dev/gantry/pkg/framework/referrers"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
)

// SetupWithManager registers r and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return core.Setup(mgr, Name, &slinkyv1beta1.RestApi{}, r, r.Workers, watches,
		core.Refs{Kind: &corev1.Secret{}, Holders: []refwatch.Holder{index.Holder(index.ControllerSecrets)}, Map: secretToRestApis})
}

func restApisOf(ctx context.Context, reader client.Reader, namespace, controller string) []reconcile.Request {
	return referrers.Requests(ctx, reader, &slinkyv1beta1.RestApiList{},
		client.InNamespace(namespace), client.MatchingFields{index.RestApiController: controller})
}

// secretToRestApis maps a Secret to the RestApis of every Controller in its
// namespace that takes a key from it.
func secretToRestApis(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		controllers := &slinkyv1beta1.ControllerList{}
		if err := reader.List(ctx, controllers, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{index.ControllerSecrets: obj.GetName()}); err != nil {
			log.FromContext(ctx).Error(err, "listing Controllers using a Secret", "secret", client.ObjectKeyFromObject(obj))
			return nil
		}
		var reqs []reconcile.Request
		for _, c := range controllers.Items {
			reqs = append(reqs, restApisOf(ctx, reader, c.Namespace, c.Name)...)
		}
		return reqs
	}
}

// watches are what SetupWithManager watches: the RestApi; the Service and
// Deployment it owns; its Controller (the pod mounts the Controller's
// ConfigMap and key). SetupWithManager adds the Secrets holding a
// Controller's keys, each watched by its name (core.Refs).
func watches(b *builder.Builder, cache client.Reader) *builder.Builder {
	return b.Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Watches(&slinkyv1beta1.Controller{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
			return restApisOf(ctx, cache, obj.GetNamespace(), obj.GetName())
		}))
}
