package trainjob

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unique"

	"github.com/spf13/pflag"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob/statusserver"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/trainjobstatus"
)

// Name is the controller's name in --controllers.
const Name = "trainjob"

// Integration registers the TrainJob controller with the manager, its
// flags at their defaults.
func Integration() workload.Integration { return IntegrationWith(NewFlags()) }

// IntegrationWith is Integration with the flags f.
func IntegrationWith(f *Flags) workload.Integration {
	return workload.Integration{
		Name:         Name,
		AddToScheme:  []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme},
		FeatureGates: FeatureGates(),
		SetupIndexes: setupRuntimeIndex,
		Flags:        f,
		Setup: func(ctx context.Context, mgr ctrl.Manager, opts workload.Options) error {
			return setup(ctx, mgr, opts, f)
		},
		TrimCached: trimCachedJobSet,
		// Trainer v2.3 ships groupKindConcurrency TrainJob: 5 (its manager
		// configuration and chart). A reconcile mostly waits on the API
		// server (the JobSet create passes JobSet's webhooks), and parallel
		// ones overlap those waits: at 1,000 jobs every JobSet existed in
		// half the time of one worker, at the same memory
		// (docs/benchmarks.md).
		DefaultWorkers: 5,
	}
}

// trimCachedJobSet keeps of a JobSet in the manager's cache its metadata,
// status, spec.suspend and each replicated job's name, replicas,
// parallelism and completions (an elastic job's resize compares them):
// its replicated jobs' templates, most of its size, are read by no
// reconciler (the applier verifies them by generation, apply.Trimmed). The
// runtime snapshot annotation, the same text on every JobSet of one
// runtime, is held once.
func trimCachedJobSet(obj client.Object) {
	js, ok := obj.(*jobsetv1alpha2.JobSet)
	if !ok {
		return
	}
	var rjs []jobsetv1alpha2.ReplicatedJob
	for _, rj := range js.Spec.ReplicatedJobs {
		kept := jobsetv1alpha2.ReplicatedJob{Name: rj.Name, Replicas: rj.Replicas}
		kept.Template.Spec.Parallelism = rj.Template.Spec.Parallelism
		kept.Template.Spec.Completions = rj.Template.Spec.Completions
		rjs = append(rjs, kept)
	}
	js.Spec = jobsetv1alpha2.JobSetSpec{Suspend: js.Spec.Suspend, ReplicatedJobs: rjs}
	if snap, ok := js.Annotations[RuntimeSnapshotAnnotation]; ok {
		js.Annotations[RuntimeSnapshotAnnotation] = unique.Make(snap).Value()
	}
}

// Flags are the TrainJob controller's own flags: where the progress
// endpoint (feature gate TrainJobStatus) serves and how trainer pods reach
// it.
type Flags struct {
	StatusPort int
	StatusURL  string
	// RuntimesConfigMap ("namespace/name") holds the ClusterTrainingRuntimes
	// the manager installs (runtimeinstaller.go); empty installs none.
	RuntimesConfigMap string
}

// NewFlags are the flags at their defaults.
func NewFlags() *Flags { return &Flags{StatusPort: statusserver.DefaultPort} }

// AddFlags registers --trainjob-status-port and --trainjob-status-url.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&f.StatusPort, "trainjob-status-port", statusserver.DefaultPort, "Port of the TrainJob progress endpoint (feature gate TrainJobStatus), served with the webhook certificate.")
	fs.StringVar(&f.StatusURL, "trainjob-status-url", "", "How trainer pods reach the progress endpoint; default https://<--webhook-service-name>.<namespace>.svc:<--trainjob-status-port>.")
	fs.StringVar(&f.RuntimesConfigMap, "trainjob-runtimes-configmap", "", "ConfigMap (namespace/name) whose keys each hold a ClusterTrainingRuntime the manager installs and keeps (the chart's trainingRuntimes); empty installs none.")
}

// Complete checks the port.
func (f *Flags) Complete() error {
	if f.StatusPort < 0 || f.StatusPort > 65535 {
		return fmt.Errorf("--trainjob-status-port must be between 0 and 65535")
	}
	if f.RuntimesConfigMap != "" {
		if ns, name, ok := strings.Cut(f.RuntimesConfigMap, "/"); !ok || ns == "" || name == "" {
			return fmt.Errorf("--trainjob-runtimes-configmap %q is not namespace/name", f.RuntimesConfigMap)
		}
	}
	return nil
}

// statusEndpoint is where the progress endpoint serves: with the webhook
// certificate, so only when webhooks are served. A zero endpoint serves
// nothing.
type statusEndpoint struct {
	Port    int
	CertDir string
	BaseURL string
}

func (f *Flags) statusEndpoint(w workload.WebhookServer) statusEndpoint {
	if w.Port == 0 || f.StatusPort == 0 {
		return statusEndpoint{}
	}
	url := f.StatusURL
	if url == "" {
		url = fmt.Sprintf("https://%s:%d", w.Host, f.StatusPort)
	}
	return statusEndpoint{Port: f.StatusPort, CertDir: w.CertDir, BaseURL: url}
}

func setup(_ context.Context, mgr ctrl.Manager, opts workload.Options, f *Flags) error {
	d, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	if err := setupRuntimeFinalizerCleanup(mgr); err != nil {
		return err
	}
	if f.RuntimesConfigMap != "" {
		if err := setupRuntimeInstaller(mgr, f.RuntimesConfigMap); err != nil {
			return err
		}
	}
	// Without JobSet's CRD the controller's JobSet watch could not start.
	// Rather than failing the whole manager (and with it Ray and Slurm),
	// the controller waits for the CRD and starts once it is served.
	var status *trainjobstatus.Config
	if opts.Features != nil && opts.Features.Enabled(StatusServer) {
		if status, err = setupStatusServer(mgr, f.statusEndpoint(opts.Webhook)); err != nil {
			return err
		}
	}
	return setupWhenJobSetServed(mgr, d, jobSetCRDPollInterval, func() error {
		r, err := New(mgr, Options{Options: opts, StatusServer: status})
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
}

// setupStatusServer runs the progress endpoint (every replica) with the
// webhook serving certificate, and returns what trainer pods are told.
func setupStatusServer(mgr ctrl.Manager, ep statusEndpoint) (*trainjobstatus.Config, error) {
	if ep.CertDir == "" || ep.BaseURL == "" || ep.Port == 0 {
		return nil, fmt.Errorf("feature gate %s needs the webhook serving certificate (--webhook-port > 0) and --trainjob-status-port", StatusServer)
	}
	if err := mgr.Add(&statusserver.Server{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Port: ep.Port, CertDir: ep.CertDir}); err != nil {
		return nil, err
	}
	ctrl.Log.WithName(Name).Info("serving TrainJob progress reports", "port", ep.Port, "url", ep.BaseURL)
	return &trainjobstatus.Config{
		BaseURL: ep.BaseURL,
		CACert: func() ([]byte, error) {
			ca, err := os.ReadFile(filepath.Join(ep.CertDir, trainjobstatus.CACertKey))
			if err == nil && len(ca) == 0 {
				err = fmt.Errorf("%s is empty", filepath.Join(ep.CertDir, trainjobstatus.CACertKey))
			}
			return ca, err
		},
	}, nil
}
