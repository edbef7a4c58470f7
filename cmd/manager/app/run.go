package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gantry-dev/gantry/pkg/framework/builder"
	fwmetrics "github.com/gantry-dev/gantry/pkg/framework/metrics"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/version"
	"github.com/gantry-dev/gantry/pkg/webhook/certs"
)

// managedObjects are the kinds cached only when Gantry manages them, so
// memory scales with Gantry's objects rather than the cluster's: Pods, Jobs
// and Services are the high-volume ones; the others are kinds Gantry only
// ever reads back after creating them (it never needs someone else's
// StatefulSet or RoleBinding). Kinds read from users' objects (Secrets and
// ConfigMaps a Controller references, Nodes, JobSets) are not filtered.
func managedObjects() []client.Object {
	return []client.Object{
		&corev1.Pod{}, &batchv1.Job{}, &corev1.Service{},
		&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{},
		&appsv1.StatefulSet{}, &appsv1.Deployment{}, &appsv1.ControllerRevision{},
		&policyv1.PodDisruptionBudget{}, &networkingv1.Ingress{},
		// The user's Secrets and ConfigMaps a spec references are not
		// cached: they are watched each by its name (package refwatch)
		// and read through the APIReader.
		&corev1.Secret{}, &corev1.ConfigMap{},
		// The Serve Service's EndpointSlices (RayService's endpoint
		// count) carry its labels, Gantry's managed-by among them.
		&discoveryv1.EndpointSlice{},
	}
}

// ManagedSelector selects objects whose app.kubernetes.io/managed-by is
// "gantry" or one of the selected integrations' upstream-compatible values.
func ManagedSelector(ins []workload.Integration) (labels.Selector, error) {
	values := []string{builder.ManagedByGantry}
	for _, in := range ins {
		for _, v := range in.ManagedByValues {
			if !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	req, err := labels.NewRequirement(builder.LabelManagedBy, selection.In, values)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*req), nil
}

// The manager itself needs leader election and events; each workload's
// reconcilers declare their own RBAC markers in their packages.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// CacheOptions is the manager's cache configuration: the label filter of
// managedObjects, managedFields stripped from every object, and the
// watched namespaces (all when empty). Integration tests use it too, so
// they see exactly what the manager's cache sees.
func CacheOptions(ins []workload.Integration, namespaces []string) (cache.Options, error) {
	sel, err := ManagedSelector(ins)
	if err != nil {
		return cache.Options{}, err
	}
	byObject := map[client.Object]cache.ByObject{}
	for _, obj := range managedObjects() {
		by := cache.ByObject{Label: sel}
		if _, ok := obj.(*corev1.Pod); ok {
			// A type's own Transform replaces DefaultTransform: trimPod
			// strips the managedFields too.
			by.Transform = trimPod
		}
		byObject[obj] = by
	}
	opts := cache.Options{
		ByObject: byObject,
		// Gantry never reads managedFields; dropping them roughly halves the
		// memory of every cached object. The integrations trim their kinds
		// further (a JobSet's spec): by type here, not by ByObject, which
		// would need the kind's CRD installed before the cache starts.
		DefaultTransform: trimCached(ins),
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts, nil
}

// trimCached strips managedFields from every cached object and runs each
// integration's TrimCached on it.
func trimCached(ins []workload.Integration) toolscache.TransformFunc {
	var trims []func(client.Object)
	for _, in := range ins {
		if in.TrimCached != nil {
			trims = append(trims, in.TrimCached)
		}
	}
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if o, ok := obj.(client.Object); ok && err == nil {
			for _, trim := range trims {
				trim(o)
			}
		}
		return obj, err
	}
}

// trimPod drops from a cached Pod what no reconciler reads and most of a
// Pod's size is: managedFields; of every container, its environment,
// command, arguments, probes, lifecycle hooks, mounts and security
// context; of every volume, its source (the name stays); and of every
// container status, all but its name, state, readiness, restart count and
// started flag (image, image ID, container ID, last state, resources,
// mounts, user). Reconcilers read a Pod's metadata, the rest of its status
// and, of its spec, the node, hostname, host network, tolerations,
// affinity, restart policy, scheduler and its containers' names, images,
// ports and resources; those stay (TestTrimPodKeepsWhatReconcilersRead). A
// reconciler that needs a dropped field must read the Pod from the API
// server (the manager's APIReader), not from the cache.
func trimPod(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			c := &containers[i]
			c.Env, c.EnvFrom, c.Command, c.Args = nil, nil, nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
			c.VolumeMounts, c.VolumeDevices, c.SecurityContext = nil, nil, nil
		}
	}
	pod.Spec.EphemeralContainers = nil
	for i := range pod.Spec.Volumes {
		pod.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{}
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			cs := &statuses[i]
			*cs = corev1.ContainerStatus{Name: cs.Name, State: cs.State, Ready: cs.Ready, RestartCount: cs.RestartCount, Started: cs.Started}
		}
	}
	pod.Status.EphemeralContainerStatuses = nil
	return pod, nil
}

// NewManager builds a controller-runtime manager for the selected
// integrations without starting it.
func NewManager(cfg *rest.Config, o *Options, ins []workload.Integration) (manager.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = o.KubeAPIQPS
	cfg.Burst = o.KubeAPIBurst

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	for _, in := range ins {
		for _, add := range in.AddToScheme {
			if err := add(scheme); err != nil {
				return nil, fmt.Errorf("adding %s types to the scheme: %w", in.Name, err)
			}
		}
	}

	cacheOpts, err := CacheOptions(ins, o.Namespaces)
	if err != nil {
		return nil, err
	}

	mopts := ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       o.metricsServerOptions(),
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
	if o.LeaseDuration > 0 {
		mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
	}
	if o.WebhookPort > 0 {
		mopts.WebhookServer = ctrlwebhook.NewServer(ctrlwebhook.Options{Port: o.WebhookPort, CertDir: o.Certs.CertDir})
	}
	return ctrl.NewManager(cfg, mopts)
}

// metricsServerOptions serves metrics on o.MetricsBindAddress: plain HTTP,
// or with --metrics-secure HTTPS behind controller-runtime's filter, which
// authenticates each caller's bearer token with a TokenReview and
// authorizes a get on the request's path with a SubjectAccessReview (the
// chart grants the manager both and ships a metrics-reader ClusterRole to
// bind to Prometheus).
func (o *Options) metricsServerOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if o.MetricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = MetricsAuthFilter
		opts.CertDir = o.MetricsCertDir
	}
	return opts
}

// Run builds the manager, sets up the selected integrations and blocks until
// ctx is cancelled (SIGTERM/SIGINT in main), then shuts down gracefully.
func Run(ctx context.Context, cfg *rest.Config, o *Options, reg *workload.Registry) error {
	log := ctrl.Log.WithName("setup")
	ins, err := reg.Select(o.Controllers)
	if err != nil {
		return err
	}
	mgr, err := NewManager(cfg, o, ins)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}

	wopts := o.workloadOptions()
	for _, in := range ins {
		if err := in.SetupWithManager(ctx, mgr, wopts); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", in.Name, err)
		}
		log.Info("controller enabled", "controller", in.Name, "workers", in.Workers(wopts))
	}
	if len(ins) == 0 {
		log.Info("no workload controllers are built into this binary; the manager runs with none")
	}
	if o.WebhookPort > 0 {
		check, err := setupWebhooks(ctx, mgr, o, ins, wopts)
		if err != nil {
			return fmt.Errorf("setting up the admission webhooks: %w", err)
		}
		if err := mgr.AddReadyzCheck("webhooks", check); err != nil {
			return err
		}
		// A second manager in one process (tests) keeps the first's.
		if _, err := fwmetrics.Register(nil, certs.ExpiryCollector(o.Certs.CertDir)); err != nil {
			return err
		}
	} else {
		log.Info("admission webhooks are off (--webhook-port=0); the controllers still validate every object")
	}

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	synced := &cacheSyncedCheck{cache: mgr.GetCache()}
	if err := mgr.Add(synced); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("informers", synced.Check); err != nil {
		return err
	}

	log.Info("starting manager", "version", version.Version, "controllers", names(ins), "namespaces", o.Namespaces)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	log.Info("manager stopped")
	return nil
}

// cacheSyncedCheck reports ready once the informers that exist when the
// manager's caches start have synced: those the field indexes made at
// setup. The controllers' own watches start later, on the
// leader only, and each controller waits for them before its first
// reconcile, so no replica reconciles from an empty cache either way.
type cacheSyncedCheck struct {
	cache  cache.Cache
	synced atomic.Bool
}

// Start implements manager.Runnable; it runs on every replica, leader or not.
func (c *cacheSyncedCheck) Start(ctx context.Context) error {
	if c.cache.WaitForCacheSync(ctx) {
		c.synced.Store(true)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection lets the check run on standby replicas too.
func (c *cacheSyncedCheck) NeedLeaderElection() bool { return false }

// Check is the readyz checker.
func (c *cacheSyncedCheck) Check(_ *http.Request) error {
	if !c.synced.Load() {
		return errors.New("informer caches have not synced yet")
	}
	return nil
}

func names(ins []workload.Integration) []string {
	out := make([]string, 0, len(ins))
	for _, in := range ins {
		out = append(out, in.Name)
	}
	return out
}

// workloadOptions are the settings every integration's Setup gets.
func (o *Options) workloadOptions() workload.Options {
	return workload.Options{
		Namespaces:              o.Namespaces,
		Features:                o.Features.Reader(),
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		IntegrationWorkers:      o.Workers,
		Webhook:                 o.webhookServer(),
	}
}

// webhookServer describes the admission webhook server to the
// integrations; a zero Port when the manager serves no webhooks.
func (o *Options) webhookServer() workload.WebhookServer {
	if o.WebhookPort == 0 {
		return workload.WebhookServer{}
	}
	return workload.WebhookServer{Port: o.WebhookPort, CertDir: o.Certs.CertDir,
		Host: fmt.Sprintf("%s.%s.svc", o.Certs.ServiceName, o.Certs.SecretNamespace)}
}
