package app

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/webhook"
	"github.com/gantry-dev/gantry/pkg/webhook/certs"
)

// Certificate management reads and fills its Secret and keeps the caBundle
// of Gantry's two webhook configurations current. It watches webhook
// configurations; the chart grants update on its own two by name only.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch

// webhookPingPath answers 200 on the webhook server: a handler registered
// first, before the webhooks (see setupWebhooks).
const webhookPingPath = "/ping"

// setupWebhooks arranges the serving certificate and registers the enabled
// workloads' webhooks once it is in place, so the webhook server never
// starts without one. The returned readyz check passes only when the
// certificate is there and the server is serving.
func setupWebhooks(ctx context.Context, mgr manager.Manager, o *Options, ins []workload.Integration, wopts workload.Options) (healthz.Checker, error) {
	live, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	var serving atomic.Pointer[healthz.Checker]
	certMgr, err := certs.Setup(ctx, mgr, live, o.Certs, func() error {
		// The manager is running: GetWebhookServer adds the server, which
		// starts at once in another goroutine and fills in its defaults
		// (its mux) under a sync.Once. The builders below read that mux
		// without the Once, so fill the defaults here first, through
		// Register (which takes the Once): otherwise the two race.
		mgr.GetWebhookServer().Register(webhookPingPath, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
		}))
		if err := webhook.Setup(mgr, names(ins), webhook.Options{Features: wopts.Features, RayMaxPodsPerCluster: rayMaxPodsPerCluster(ins)}); err != nil {
			return err
		}
		started := mgr.GetWebhookServer().StartedChecker()
		serving.Store(&started)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(req *http.Request) error {
		if err := certMgr.Check(req); err != nil {
			return err
		}
		started := serving.Load()
		if started == nil {
			return errors.New("the webhook server is not registered yet")
		}
		return (*started)(req)
	}, nil
}

// rayMaxPodsPerCluster is the RayCluster integration's
// --ray-max-pods-per-cluster, which its webhook enforces at admission; 0
// when it is not selected.
func rayMaxPodsPerCluster(ins []workload.Integration) int32 {
	for _, in := range ins {
		if f, ok := in.Flags.(*raycluster.Flags); ok {
			return f.MaxPodsPerCluster
		}
	}
	return 0
}
