package restapi

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// ClientRegistry is what the RestApi reconciler publishes Slurm clients to;
// *slurm.Registry satisfies it, and the NodeSet reconciler reads from it.
type ClientRegistry interface {
	Set(key types.NamespacedName, cfg slurm.Config) (bool, error)
	Delete(key types.NamespacedName) bool
}

// clientPublisher remembers which Controller each RestApi published a
// client for, so the client goes away with the RestApi.
type clientPublisher struct {
	registry  ClientRegistry
	onChange  func(controller types.NamespacedName)
	mu        sync.Mutex
	byRestApi map[types.NamespacedName]types.NamespacedName
}

// ServiceURL is the slurmrestd endpoint of a RestApi, reached through its
// Service's cluster DNS name.
func ServiceURL(ra *slinkyv1beta1.RestApi) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", common.RestApiName(ra.Name), ra.Namespace, common.SlurmrestdPort)
}

// publish points the Controller's Slurm client at this RestApi, signing
// tokens with the Controller's jwt key. The registry rebuilds the client
// only when the URL or key changed.
func (p *clientPublisher) publish(ra *slinkyv1beta1.RestApi, controller *slinkyv1beta1.Controller, jwtKey []byte) error {
	if p == nil || p.registry == nil {
		return nil
	}
	ck := types.NamespacedName{Namespace: controller.Namespace, Name: controller.Name}
	changed, err := p.registry.Set(ck, slurm.Config{URL: ServiceURL(ra), JWTKey: jwtKey})
	if err != nil {
		return fmt.Errorf("configuring the Slurm client for Controller %s: %w", ck, err)
	}
	if changed && p.onChange != nil {
		p.onChange(ck)
	}
	p.mu.Lock()
	p.byRestApi[types.NamespacedName{Namespace: ra.Namespace, Name: ra.Name}] = ck
	p.mu.Unlock()
	return nil
}

// forget drops the client published for a deleted RestApi.
func (p *clientPublisher) forget(restApi types.NamespacedName) {
	if p == nil || p.registry == nil {
		return
	}
	p.mu.Lock()
	ck, ok := p.byRestApi[restApi]
	delete(p.byRestApi, restApi)
	p.mu.Unlock()
	if ok && p.registry.Delete(ck) && p.onChange != nil {
		p.onChange(ck)
	}
}

// WithClientRegistry makes the reconciler publish a Slurm client for each
// RestApi's Controller.
func (r *Reconciler) WithClientRegistry(reg ClientRegistry) *Reconciler {
	r.clients = &clientPublisher{registry: reg, byRestApi: map[types.NamespacedName]types.NamespacedName{}}
	return r
}

func (r *Reconciler) publishClient(ctx context.Context, ra *slinkyv1beta1.RestApi, controller *slinkyv1beta1.Controller) error {
	if r.clients == nil {
		return nil
	}
	ref := controller.Spec.EffectiveJwtKeyRef()
	if ref == nil {
		return fmt.Errorf("Controller %s/%s has no jwt key", controller.Namespace, controller.Name)
	}
	key, err := r.secrets.GetSecretKey(ctx, controller.Namespace, *ref)
	if err != nil {
		return err
	}
	return r.clients.publish(ra, controller, key)
}
