// Package app is the Gantry manager: flag parsing, manager construction with
// label-filtered caches, health probes and the start of the selected
// workload integrations. cmd/manager/main.go only registers workloads and
// calls Run.
package app

import (
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gantry-dev/gantry/pkg/framework/features"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Options are the manager's settings, all from flags and read once at start-up.
type Options struct {
	Kubeconfig              string
	Controllers             []string
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	Namespaces              []string
	KubeAPIQPS              float32
	KubeAPIBurst            int
	MaxConcurrentReconciles int
	Zap                     zap.Options

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
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; default: $KUBECONFIG, in-cluster config, then ~/.kube/config.")
	fs.StringSliceVar(&o.Controllers, "controllers", []string{"all"},
		fmt.Sprintf("Comma-separated workload controllers to run, or \"all\". Available: %s.", strings.Join(reg.Names(), ", ")))
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the manager's own namespace).")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "gantry-manager.gantry.dev", "Name of the leader-election Lease.")
	fs.StringSliceVar(&o.Namespaces, "namespaces", nil, "Comma-separated namespaces to watch; empty watches all namespaces.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", 100, "Client-side QPS limit towards the API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 200, "Client-side burst limit towards the API server.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 1, "Default number of parallel reconciles per controller.")
	o.Features.AddFlag(fs)

	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.Zap.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		return nil, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	if o.MaxConcurrentReconciles < 1 {
		return nil, fmt.Errorf("--max-concurrent-reconciles must be at least 1")
	}
	for _, ns := range o.Namespaces {
		if strings.TrimSpace(ns) == "" {
			return nil, fmt.Errorf("--namespaces contains an empty name")
		}
	}
	if _, err := reg.Select(o.Controllers); err != nil {
		return nil, err
	}
	return o, nil
}
