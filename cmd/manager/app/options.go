package app

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gantry-dev/gantry/pkg/framework/features"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/webhook/certs"
)

// Options are the manager's settings, all from flags and read once at start-up.
type Options struct {
	// ShowVersion prints the version and exits (--version).
	ShowVersion        bool
	Kubeconfig         string
	Controllers        []string
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS, each request authenticated
	// and authorized through the API server (TokenReview and
	// SubjectAccessReview of a get on the /metrics non-resource URL).
	MetricsSecure bool
	// MetricsCertDir holds the metrics serving certificate (tls.crt,
	// tls.key); empty makes a self-signed one in memory at start-up.
	MetricsCertDir          string
	HealthProbeBindAddress  string
	PprofBindAddress        string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	Namespaces              []string
	KubeAPIQPS              float32
	KubeAPIBurst            int
	MaxConcurrentReconciles int
	// Workers are per-family worker counts (--workers), overriding
	// MaxConcurrentReconciles for the families named.
	Workers map[string]int
	Zap     zap.Options

	// Leader-election timings (controller-runtime's defaults: 15s/10s/2s).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	// WebhookPort serves the admission webhooks; 0 runs no webhook server.
	WebhookPort int
	// Certs configures the webhook serving certificate.
	Certs certs.Options

	// Features holds every registered workload's gates, set from --feature-gates.
	Features *features.Gate
}

// ParseFlags parses the manager's command line. The registry's feature gates
// are registered first so --feature-gates can name them.
func ParseFlags(args []string, reg *workload.Registry) (*Options, error) {
	o := &Options{
		Features: features.New(),
		Zap:      zap.Options{Development: false},
	}
	for _, in := range reg.All() {
		if len(in.FeatureGates) == 0 {
			continue
		}
		if err := o.Features.Register(in.Name, in.FeatureGates); err != nil {
			return nil, err
		}
	}

	fs := pflag.NewFlagSet("gantry-manager", pflag.ContinueOnError)
	fs.BoolVar(&o.ShowVersion, "version", false, "Print the version (the release the chart, image and binary share) and exit.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; default: $KUBECONFIG, in-cluster config, then ~/.kube/config.")
	fs.StringSliceVar(&o.Controllers, "controllers", []string{"all"},
		fmt.Sprintf("Comma-separated workload controllers to run, or \"all\". Available: %s.", strings.Join(reg.Names(), ", ")))
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false, "Serve metrics over HTTPS and let only callers whose token the API server accepts and who may get the /metrics non-resource URL read them (the chart's default); false serves plain HTTP to anyone who reaches the port.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "Directory holding the metrics serving certificate (tls.crt, tls.key) for --metrics-secure; empty makes a self-signed one at start-up.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", "0", "Address Go's /debug/pprof endpoints bind to, for profiling memory and CPU; \"0\" (the default) disables them.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the manager's own namespace).")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "gantry-manager.gantry.dev", "Name of the leader-election Lease.")
	fs.StringSliceVar(&o.Namespaces, "namespaces", nil, "Comma-separated namespaces to watch; empty watches all namespaces.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", 100, "Client-side QPS limit towards the API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 200, "Client-side burst limit towards the API server.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 0,
		fmt.Sprintf("Parallel reconciles of every controller not named in --workers; 0 (the default) gives each its own (%s), as the upstream operators ship.", reg.DefaultWorkers()))
	fs.StringToIntVar(&o.Workers, "workers", nil,
		fmt.Sprintf("Parallel reconciles per workload family, e.g. raycluster=4,trainjob=2 (names as in --controllers: %s), overriding --max-concurrent-reconciles for those named; "+
			"each controller of the family gets that many (raycluster: the RayCluster, RayJob and RayService controllers each; slurm: each Slinky kind's controller).", strings.Join(reg.Names(), ", ")))
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 12*time.Second, "How long a non-leader waits before taking over an unrenewed leadership (longer than the renew deadline, so a leader that cannot renew steps down before another takes over).")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up leadership.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often leader-election clients retry.")

	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the admission webhook server; 0 serves no webhooks (the controllers still validate).")
	fs.StringVar(&o.Certs.CertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhook serving certificate (tls.crt, tls.key).")
	fs.StringVar(&o.Certs.Mode, "cert-management", certs.ModeSelf, "Who provides the webhook serving certificate: \"self\" (Gantry makes, stores, injects and rotates it) or \"external\" (files in --webhook-cert-dir, e.g. from cert-manager).")
	fs.StringVar(&o.Certs.SecretName, "webhook-secret-name", "gantry-webhook-cert", "Secret holding the self-managed CA and serving certificate.")
	fs.StringVar(&o.Certs.SecretNamespace, "webhook-secret-namespace", "", "Namespace of --webhook-secret-name (default: the manager's own namespace).")
	fs.StringVar(&o.Certs.ServiceName, "webhook-service-name", "gantry-webhook", "The webhook Service; its DNS names go into the certificate.")
	fs.StringSliceVar(&o.Certs.ExtraDNSNames, "webhook-dns-names", nil, "Extra DNS names for the certificate, e.g. localhost when the API server calls the webhooks by URL.")
	fs.StringVar(&o.Certs.ValidatingConfiguration, "validating-webhook-configuration", "gantry-validating-webhook-configuration", "ValidatingWebhookConfiguration whose caBundle Gantry keeps current.")
	fs.StringVar(&o.Certs.MutatingConfiguration, "mutating-webhook-configuration", "gantry-mutating-webhook-configuration", "MutatingWebhookConfiguration whose caBundle Gantry keeps current.")
	fs.BoolVar(&o.Certs.WriteFiles, "webhook-cert-write", false, "Copy the self-managed certificate from its Secret into --webhook-cert-dir (the chart's in-memory emptyDir, or a directory outside a cluster), instead of relying on a mounted Secret volume.")
	o.Features.AddFlag(fs)
	for _, in := range reg.All() {
		if in.Flags != nil {
			in.Flags.AddFlags(fs)
		}
	}

	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.Zap.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.ShowVersion {
		// Nothing else is read: --version answers on any command line.
		return o, nil
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		return nil, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	if o.MaxConcurrentReconciles < 0 {
		return nil, fmt.Errorf("--max-concurrent-reconciles must not be negative (0 gives each controller its default)")
	}
	if err := reg.CheckWorkers(o.Workers); err != nil {
		return nil, err
	}
	for _, in := range reg.All() {
		if in.Flags == nil {
			continue
		}
		if err := in.Flags.Complete(); err != nil {
			return nil, err
		}
	}
	for _, ns := range o.Namespaces {
		if strings.TrimSpace(ns) == "" {
			return nil, fmt.Errorf("--namespaces contains an empty name")
		}
	}
	if _, err := reg.Select(o.Controllers); err != nil {
		return nil, err
	}
	if o.WebhookPort < 0 || o.WebhookPort > 65535 {
		return nil, fmt.Errorf("--webhook-port must be between 0 and 65535")
	}
	if o.WebhookPort > 0 {
		if o.Certs.SecretNamespace == "" {
			o.Certs.SecretNamespace = ownNamespace()
		}
		if o.Certs.Mode == certs.ModeSelf && o.Certs.SecretNamespace == "" {
			return nil, fmt.Errorf("admission webhooks are on (--webhook-port=%d) but the manager's namespace is unknown outside a cluster: "+
				"pass --webhook-secret-namespace (and --webhook-dns-names=localhost --webhook-cert-write to serve the API server by URL), "+
				"or --webhook-port=0 to run without admission webhooks", o.WebhookPort)
		}
		if err := o.Certs.Validate(); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// serviceAccountNamespaceFile is where a pod finds its own namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace is the manager's namespace when it runs in a pod: POD_NAMESPACE
// (the chart sets it through the downward API), else the service account's
// namespace file; empty outside a cluster. Read once at start-up.
func ownNamespace() string {
	if ns := strings.TrimSpace(os.Getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}
