package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gantry-dev/gantry/pkg/controller/ray"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

const testGate featuregate.Feature = "TestGate"

func testRegistry(t *testing.T) *workload.Registry {
	t.Helper()
	reg, _, _ := testRegistryWithFlags(t)
	return reg
}

// testRegistryWithFlags registers three integrations with the families'
// own flags, which it also returns.
func testRegistryWithFlags(t *testing.T) (*workload.Registry, *raycluster.Flags, *slurm.Flags) {
	t.Helper()
	reg := &workload.Registry{}
	ray, slurmFlags := raycluster.NewFlags(), &slurm.Flags{}
	for _, f := range []struct {
		name  string
		flags workload.Flags
	}{{"raycluster", ray}, {"trainjob", trainjob.NewFlags()}, {"slurm", slurmFlags}} {
		n := f.name
		in := workload.Integration{Name: n, Flags: f.flags, Setup: func(context.Context, ctrl.Manager, workload.Options) error { return nil }}
		if n == "raycluster" {
			in.FeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{testGate: {Default: true, PreRelease: featuregate.Beta}}
		}
		reg.MustRegister(in)
	}
	return reg, ray, slurmFlags
}

func TestParseFlagsDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "gantry-system")
	o, err := ParseFlags(nil, testRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Controllers, ",") != "all" || o.KubeAPIQPS != 100 || o.KubeAPIBurst != 200 ||
		o.MetricsBindAddress != ":8080" || o.HealthProbeBindAddress != ":8081" || o.PprofBindAddress != "0" ||
		o.LeaderElect || len(o.Namespaces) != 0 {
		t.Fatalf("unexpected defaults: %+v", o)
	}
	if !o.Features.Enabled(testGate) {
		t.Fatal("a registered gate's default (on) was not applied")
	}
	if o.WebhookPort != 9443 || o.Certs.Mode != "self" || o.Certs.SecretNamespace != "gantry-system" ||
		o.Certs.SecretName != "gantry-webhook-cert" || o.Certs.WriteFiles {
		t.Fatalf("unexpected webhook defaults: %+v", o.Certs)
	}
	if got := strings.Join(o.Certs.DNSNames(), ","); got != "gantry-webhook.gantry-system.svc,gantry-webhook.gantry-system.svc.cluster.local,gantry-webhook.gantry-system" {
		t.Fatalf("certificate DNS names = %s", got)
	}
}

func TestParseFlagsWebhooksOutsideACluster(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	_, err := ParseFlags(nil, testRegistry(t))
	if err == nil || !strings.Contains(err.Error(), "--webhook-port=0") {
		t.Fatalf("outside a cluster the default webhook setup must fail with advice, got %v", err)
	}
	o, err := ParseFlags([]string{"--webhook-secret-namespace=gantry-system", "--webhook-dns-names=localhost", "--webhook-cert-write"}, testRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Certs.WriteFiles || !strings.Contains(strings.Join(o.Certs.DNSNames(), ","), "localhost") {
		t.Fatalf("unexpected webhook options: %+v", o.Certs)
	}
}

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		check   func(*Options) bool
		wantErr string
	}{
		{name: "controllers and namespaces", args: []string{"--controllers=slurm,raycluster", "--namespaces", "a,b"},
			check: func(o *Options) bool {
				return strings.Join(o.Controllers, ",") == "slurm,raycluster" && strings.Join(o.Namespaces, ",") == "a,b"
			}},
		{name: "version, whatever else the command line says", args: []string{"--version", "--webhook-port=9443", "--kube-api-qps=0"},
			check: func(o *Options) bool { return o.ShowVersion }},
		{name: "leader election", args: []string{"--leader-elect", "--leader-election-namespace=ops", "--leader-election-id=x"},
			check: func(o *Options) bool {
				return o.LeaderElect && o.LeaderElectionNamespace == "ops" && o.LeaderElectionID == "x"
			}},
		{name: "qps", args: []string{"--kube-api-qps=20", "--kube-api-burst=40"},
			check: func(o *Options) bool { return o.KubeAPIQPS == 20 && o.KubeAPIBurst == 40 }},
		{name: "feature gate off", args: []string{"--feature-gates=TestGate=false"},
			check: func(o *Options) bool { return !o.Features.Enabled(testGate) }},
		{name: "zap flags are accepted", args: []string{"--zap-log-level=debug", "--zap-devel"},
			check: func(o *Options) bool { return o.Zap.Development }},
		{name: "unknown controller", args: []string{"--controllers=raycluster,pytorchjob"}, wantErr: "unknown controller(s) pytorchjob"},
		{name: "unknown gate", args: []string{"--feature-gates=NoSuchGate=true"}, wantErr: "unrecognized feature gate"},
		{name: "bad qps", args: []string{"--kube-api-qps=0"}, wantErr: "must be positive"},
		{name: "workers left to each controller", args: nil,
			check: func(o *Options) bool { return o.MaxConcurrentReconciles == 0 }},
		{name: "workers for every controller", args: []string{"--max-concurrent-reconciles=3"},
			check: func(o *Options) bool { return o.MaxConcurrentReconciles == 3 }},
		{name: "negative workers", args: []string{"--max-concurrent-reconciles=-1"}, wantErr: "must not be negative"},
		{name: "workers per family", args: []string{"--workers=raycluster=4,slurm=2", "--workers=trainjob=3"},
			check: func(o *Options) bool {
				return len(o.Workers) == 3 && o.Workers["raycluster"] == 4 && o.Workers["slurm"] == 2 && o.Workers["trainjob"] == 3
			}},
		{name: "workers of an unknown family", args: []string{"--workers=raycluster=4,rayjob=2"},
			wantErr: "unknown controller(s) rayjob in --workers (available: raycluster, trainjob, slurm)"},
		{name: "workers of all", args: []string{"--workers=all=2"}, wantErr: "unknown controller(s) all in --workers"},
		{name: "zero workers of a family", args: []string{"--workers=trainjob=0"}, wantErr: "--workers: trainjob=0: a worker count must be at least 1"},
		{name: "workers without a count", args: []string{"--workers=raycluster"}, wantErr: "--workers"},
		{name: "workers not a number", args: []string{"--workers=raycluster=four"}, wantErr: "--workers"},
		{name: "empty namespace", args: []string{"--namespaces=a,,b"}, wantErr: "empty name"},
		{name: "stray argument", args: []string{"run"}, wantErr: "unexpected arguments"},
		{name: "leader election timings", args: []string{"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=5s"},
			check: func(o *Options) bool {
				return o.LeaseDuration == 30*time.Second && o.RenewDeadline == 20*time.Second && o.RetryPeriod == 5*time.Second
			}},
		{name: "external certificates", args: []string{"--webhook-port=9443", "--cert-management=external", "--webhook-cert-dir=/certs"},
			check: func(o *Options) bool { return o.Certs.Mode == "external" && o.Certs.CertDir == "/certs" }},
		{name: "bad certificate mode", args: []string{"--webhook-port=9443", "--webhook-secret-namespace=x", "--cert-management=manual"}, wantErr: `--cert-management must be "self" or "external"`},
		{name: "bad webhook port", args: []string{"--webhook-port=70000"}, wantErr: "--webhook-port must be between"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Webhooks are on by default and need a namespace; cases about
			// other flags turn them off, as a manager outside a cluster would.
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--webhook-port") {
				args = append([]string{"--webhook-port=0"}, args...)
			}
			o, err := ParseFlags(args, testRegistry(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Fatalf("options not as expected: %+v", o)
			}
		})
	}
}

func TestManagedSelector(t *testing.T) {
	reg := &workload.Registry{}
	noop := func(context.Context, ctrl.Manager, workload.Options) error { return nil }
	reg.MustRegister(workload.Integration{Name: "a", Setup: noop, ManagedByValues: []string{"upstream-a", "gantry"}})
	reg.MustRegister(workload.Integration{Name: "b", Setup: noop, ManagedByValues: []string{"upstream-a", "upstream-b"}})
	sel, err := ManagedSelector(reg.All())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sel.String(), "app.kubernetes.io/managed-by in (gantry,upstream-a,upstream-b)"; got != want {
		t.Fatalf("selector = %q, want %q", got, want)
	}
}

func TestParseFlagsRayMaxPodsPerCluster(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "gantry-system")
	reg, ray, _ := testRegistryWithFlags(t)
	if _, err := ParseFlags(nil, reg); err != nil {
		t.Fatal(err)
	}
	if ray.MaxPodsPerCluster != 1000 {
		t.Errorf("default --ray-max-pods-per-cluster = %d, want 1000", ray.MaxPodsPerCluster)
	}
	reg, ray, _ = testRegistryWithFlags(t)
	if _, err := ParseFlags([]string{"--ray-max-pods-per-cluster=5000"}, reg); err != nil || ray.MaxPodsPerCluster != 5000 {
		t.Errorf("--ray-max-pods-per-cluster=5000 parsed as %d, %v", ray.MaxPodsPerCluster, err)
	}
	for _, bad := range []string{"0", "-1", "2147483648"} {
		if _, err := ParseFlags([]string{"--ray-max-pods-per-cluster=" + bad}, testRegistry(t)); err == nil {
			t.Errorf("--ray-max-pods-per-cluster=%s accepted", bad)
		}
	}
}

// TestParseFlagsBatchScheduler: KubeRay's --batch-scheduler names, and its
// deprecated --enable-batch-scheduler meaning Volcano; an unknown name, or
// both flags, stop the manager.
func TestParseFlagsBatchScheduler(t *testing.T) {
	for _, args := range [][]string{{"--batch-scheduler=slurm"}, {"--batch-scheduler=yunikorn", "--enable-batch-scheduler"}} {
		if _, err := ParseFlags(append([]string{"--webhook-port=0"}, args...), testRegistry(t)); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	for args, want := range map[string]string{"": "", "--enable-batch-scheduler": "volcano", "--batch-scheduler=kai-scheduler": "kai-scheduler"} {
		argv := []string{"--webhook-port=0"}
		if args != "" {
			argv = append(argv, args)
		}
		reg, ray, _ := testRegistryWithFlags(t)
		if _, err := ParseFlags(argv, reg); err != nil {
			t.Errorf("%q: %v", args, err)
		} else if ray.BatchScheduler != want {
			t.Errorf("%q: BatchScheduler %q, want %q", args, ray.BatchScheduler, want)
		}
	}
}

// TestParseFlagsPropagatedNodeConditions: Slinky's comma-separated list,
// each item trimmed and empty ones dropped as Slinky reads it.
func TestParseFlagsPropagatedNodeConditions(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "gantry-system")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--propagated-node-conditions=KernelDeadlock,DiskPressure"}, "KernelDeadlock|DiskPressure"},
		{[]string{"--propagated-node-conditions= KernelDeadlock ,, DiskPressure,"}, "KernelDeadlock|DiskPressure"},
	} {
		reg, _, slurmFlags := testRegistryWithFlags(t)
		if _, err := ParseFlags(tt.args, reg); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(slurmFlags.PropagatedNodeConditions, "|"); got != tt.want {
			t.Errorf("%v parsed as %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestWorkersPerController: the worker count each family's controllers get
// from the parsed flags, as Run hands them over: --workers for the families
// it names, else --max-concurrent-reconciles, else the family's default
// (trainjob 5, as Trainer ships; raycluster 8, where KubeRay ships 1;
// slurm 1, as Slinky).
func TestWorkersPerController(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "raycluster=8,trainjob=5,slurm=1"},
		{[]string{"--workers=raycluster=4"}, "raycluster=4,trainjob=5,slurm=1"},
		{[]string{"--workers=trainjob=1"}, "raycluster=8,trainjob=1,slurm=1"},
		{[]string{"--workers=raycluster=1"}, "raycluster=1,trainjob=5,slurm=1"},
		{[]string{"--max-concurrent-reconciles=3"}, "raycluster=3,trainjob=3,slurm=3"},
		{[]string{"--max-concurrent-reconciles=3", "--workers=raycluster=6,slurm=2"}, "raycluster=6,trainjob=3,slurm=2"},
	} {
		reg := &workload.Registry{}
		reg.MustRegister(ray.Integration())
		reg.MustRegister(trainjob.Integration())
		reg.MustRegister(slurm.Integration())
		o, err := ParseFlags(append([]string{"--webhook-port=0"}, tc.args...), reg)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		wopts := o.workloadOptions()
		var got []string
		for _, in := range reg.All() {
			// The family's own Setup needs a cluster: record what it would get.
			in.SetupIndexes = nil
			in.Setup = func(_ context.Context, _ ctrl.Manager, opts workload.Options) error {
				got = append(got, fmt.Sprintf("%s=%d", in.Name, opts.Workers()))
				if opts.Workers() != in.Workers(wopts) {
					t.Errorf("%v: %s: Setup got %d workers, Workers() says %d", tc.args, in.Name, opts.Workers(), in.Workers(wopts))
				}
				return nil
			}
			if err := in.SetupWithManager(context.Background(), nil, wopts); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%v: workers %s, want %s", tc.args, strings.Join(got, ","), tc.want)
		}
	}
}
