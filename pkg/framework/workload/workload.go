package workload

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Options are the operator-wide settings handed to every integration's Setup.
// They are read once at start-up; reconcilers must not read the environment.
type Options struct {
	// Namespaces restricts the watch to these namespaces; empty means all.
	Namespaces []string
	// Features is the process's feature gate, already parsed from --feature-gates.
	Features featuregate.FeatureGate
	// MaxConcurrentReconciles is the worker count of every controller;
	// 0 leaves each integration its DefaultWorkers (SetupWithManager).
	MaxConcurrentReconciles int
	// IntegrationWorkers overrides MaxConcurrentReconciles for the
	// integrations it names (--workers): each controller of that
	// integration (the raycluster family: RayCluster, RayJob and
	// RayService) runs that many workers. SetupWithManager resolves it.
	IntegrationWorkers map[string]int
	// Webhook is the manager's admission webhook server: an integration
	// that serves an endpoint of its own over TLS shares its certificate.
	Webhook WebhookServer

	// Clock is the reconcilers' clock; nil means the real one. Tests pin it.
	Clock clock.PassiveClock
	// Registerer takes the workload metrics; nil means controller-runtime's
	// registry, which the manager serves on its metrics endpoint.
	Registerer prometheus.Registerer
}

// WebhookServer is the manager's admission webhook server.
type WebhookServer struct {
	// Port is where it serves; 0 when the manager serves no webhooks.
	Port int
	// CertDir holds its serving certificate (tls.crt, tls.key, ca.crt).
	CertDir string
	// Host is its Service's in-cluster name, <service>.<namespace>.svc,
	// which its certificate names.
	Host string
}

// Flags are an integration's own command-line flags and the typed
// configuration they fill, which its Setup reads. The manager adds every
// registered integration's flags before it parses its command line (so a
// flag of an integration that is not selected is still accepted), and
// calls Complete after.
type Flags interface {
	// AddFlags registers the flags on fs, with their defaults.
	AddFlags(fs *pflag.FlagSet)
	// Complete checks and normalizes the parsed values.
	Complete() error
}

// ClockOrReal is Clock, or the real clock when none is set.
func (o Options) ClockOrReal() clock.PassiveClock {
	if o.Clock == nil {
		return clock.RealClock{}
	}
	return o.Clock
}

// RegistererOrDefault is Registerer, or controller-runtime's registry.
func (o Options) RegistererOrDefault() prometheus.Registerer {
	if o.Registerer == nil {
		return ctrlmetrics.Registry
	}
	return o.Registerer
}

// Workers is the number of reconciles a controller runs in parallel:
// MaxConcurrentReconciles, at least one.
func (o Options) Workers() int { return max(o.MaxConcurrentReconciles, 1) }

// Integration describes one workload family.
type Integration struct {
	// Name is what --controllers accepts: one lower-case word.
	Name string
	// AddToScheme registers the workload's API types (and those it creates).
	AddToScheme []func(*runtime.Scheme) error
	// ManagedByValues are extra values of the app.kubernetes.io/managed-by
	// label that Pods, Jobs and Services of this workload may carry, beyond
	// "gantry" (e.g. values written by the upstream operator it replaces).
	ManagedByValues []string
	// FeatureGates are the gates this workload reads, registered before
	// --feature-gates is parsed.
	FeatureGates map[featuregate.Feature]featuregate.FeatureSpec
	// SetupIndexes registers the cache field indexes the workload's
	// reconcilers and watches use, once, before Setup; nil registers none.
	SetupIndexes func(ctx context.Context, indexer client.FieldIndexer) error
	// Setup wires the workload's reconcilers and watches into the manager.
	Setup func(ctx context.Context, mgr ctrl.Manager, opts Options) error
	// Flags, when set, are the workload's own command-line flags.
	Flags Flags
	// DefaultWorkers is how many objects its controllers reconcile at once
	// when neither --workers nor --max-concurrent-reconciles gives a
	// count; 0 means one.
	DefaultWorkers int
	// TrimCached, when set, drops from an object entering the manager's
	// cache what none of the workload's reconcilers reads there. The
	// manager calls it for every object it caches (but Pods, which have
	// their own transform), so it must leave other kinds alone. A
	// reconciler that needs a dropped field reads the object through the
	// API reader.
	TrimCached func(obj client.Object)
}

// Workers is the worker count each of the integration's controllers gets
// with opts: its IntegrationWorkers entry, else MaxConcurrentReconciles,
// else its DefaultWorkers; at least one.
func (in Integration) Workers(opts Options) int {
	if n := opts.IntegrationWorkers[in.Name]; n > 0 {
		return n
	}
	if opts.MaxConcurrentReconciles > 0 {
		return opts.MaxConcurrentReconciles
	}
	return max(in.DefaultWorkers, 1)
}

// SetupWithManager registers the integration's field indexes, then runs
// its Setup with the worker count Workers resolves (so Setup reads it from
// opts.Workers()): the one way an integration is started, by the manager
// and by tests alike.
func (in Integration) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	opts.MaxConcurrentReconciles = in.Workers(opts)
	opts.IntegrationWorkers = nil
	if in.SetupIndexes != nil {
		if err := in.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return fmt.Errorf("registering the %s field indexes: %w", in.Name, err)
		}
	}
	return in.Setup(ctx, mgr, opts)
}

// Registry is an ordered set of integrations keyed by name.
type Registry struct {
	items []Integration
}

// Register adds an integration. Names must be unique, lower-case and
// non-empty, and Setup must be set.
func (r *Registry) Register(in Integration) error {
	switch {
	case in.Name == "" || in.Name != strings.ToLower(in.Name) || strings.ContainsAny(in.Name, ", "):
		return fmt.Errorf("workload name %q must be a non-empty lower-case word", in.Name)
	case in.Setup == nil:
		return fmt.Errorf("workload %q has no Setup function", in.Name)
	case slices.Contains(r.Names(), in.Name):
		return fmt.Errorf("workload %q registered twice", in.Name)
	}
	r.items = append(r.items, in)
	return nil
}

// MustRegister is Register for start-up code, where a duplicate is a programming error.
func (r *Registry) MustRegister(in Integration) {
	if err := r.Register(in); err != nil {
		panic(err)
	}
}

// Names lists the registered integrations in registration order.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.items))
	for _, in := range r.items {
		names = append(names, in.Name)
	}
	return names
}

// DefaultWorkers describes each integration's DefaultWorkers, for help
// text: "<name> <workers>, ...".
func (r *Registry) DefaultWorkers() string {
	parts := make([]string, 0, len(r.items))
	for _, in := range r.items {
		parts = append(parts, fmt.Sprintf("%s %d", in.Name, max(in.DefaultWorkers, 1)))
	}
	return strings.Join(parts, ", ")
}

// CheckWorkers refuses a per-integration worker count (--workers) that
// names no registered integration or is below one.
func (r *Registry) CheckWorkers(workers map[string]int) error {
	if err := r.checkNames(maps.Keys(workers), "--workers"); err != nil {
		return err
	}
	for _, n := range r.Names() {
		if c, ok := workers[n]; ok && c < 1 {
			return fmt.Errorf("--workers: %s=%d: a worker count must be at least 1 (leave the controller out for its default)", n, c)
		}
	}
	return nil
}

// checkNames refuses names no integration is registered under, listing
// them (sorted) and what is available; flag names where they came from.
func (r *Registry) checkNames(names iter.Seq[string], flag string) error {
	var unknown []string
	for n := range names {
		if !slices.Contains(r.Names(), n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("unknown controller(s) %s in %s (available: %s)", strings.Join(unknown, ", "), flag, r.available())
}

// available lists the registered names for error messages.
func (r *Registry) available() string {
	if len(r.items) == 0 {
		return "none are built into this binary"
	}
	return strings.Join(r.Names(), ", ")
}

// Select returns the integrations named in names, in registration order.
// "all" (or an empty list) selects every registered integration. Unknown
// names are an error that lists what is available.
func (r *Registry) Select(names []string) ([]Integration, error) {
	want := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		want[n] = true
	}
	if len(want) == 0 || want["all"] {
		delete(want, "all")
		for _, in := range r.items {
			want[in.Name] = true
		}
	}
	if err := r.checkNames(maps.Keys(want), "--controllers"); err != nil {
		return nil, err
	}
	var out []Integration
	for _, in := range r.items {
		if want[in.Name] {
			out = append(out, in)
		}
	}
	return out, nil
}

// All returns every registered integration in registration order.
func (r *Registry) All() []Integration { return slices.Clone(r.items) }
