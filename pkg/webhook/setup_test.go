package webhook

import (
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// Paths, one per webhook, as config/webhook/manifests.yaml lists them.
var (
	rayPaths   = []string{"/validate-ray-io-v1-raycluster", "/validate-ray-io-v1-rayjob", "/validate-ray-io-v1-rayservice"}
	slurmPaths = []string{
		"/validate-slinky-slurm-net-v1beta1-accounting",
		"/validate-slinky-slurm-net-v1beta1-controller",
		"/validate-slinky-slurm-net-v1beta1-loginset",
		"/validate-slinky-slurm-net-v1beta1-nodeset",
		"/validate-slinky-slurm-net-v1beta1-restapi",
	}
	trainerPaths = []string{
		"/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
		"/validate-trainer-kubeflow-org-v1alpha1-trainjob",
		"/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
		"/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
	}
)

func TestSetupRegistersOnlyEnabledWorkloads(t *testing.T) {
	all := slices.Concat(rayPaths, slurmPaths, trainerPaths)
	tests := []struct {
		workloads []string
		want      []string
	}{
		{workloads: []string{"raycluster"}, want: rayPaths},
		{workloads: []string{"trainjob"}, want: trainerPaths},
		{workloads: []string{"slurm", "somethingelse"}, want: slurmPaths},
		{workloads: []string{"raycluster", "trainjob", "slurm"}, want: all},
		{workloads: []string{"all"}, want: all},
		{workloads: nil, want: nil},
	}
	for _, tc := range tests {
		t.Run(strings.Join(append([]string{"workloads"}, tc.workloads...), "-"), func(t *testing.T) {
			mgr := newTestManager(t)
			if err := Setup(mgr, tc.workloads, Options{}); err != nil {
				t.Fatal(err)
			}
			mux := mgr.GetWebhookServer().WebhookMux()
			for _, p := range all {
				registered := false
				if mux != nil {
					_, pattern := mux.Handler(&http.Request{URL: &url.URL{Path: p}})
					registered = pattern == p
				}
				if want := slices.Contains(tc.want, p); registered != want {
					t.Errorf("%s registered = %v, want %v", p, registered, want)
				}
			}
		})
	}
}

func newTestManager(t *testing.T) ctrl.Manager {
	t.Helper()
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, rayv1.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme, slinkyv1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing is started, so the address is never dialled.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestGeneratedManifestsMatchHandlers ties the kubebuilder markers (through
// `make manifests`) to what Setup serves: every path in
// config/webhook/manifests.yaml is registered, named v<kind>.<group> or
// m<kind>.<group>, with failurePolicy Fail and sideEffects None, for
// CREATE and UPDATE; the Ray kinds' updates are the exception
// (failOpenUpdates): their own v<kind>-update.<group> with Ignore.
func TestGeneratedManifestsMatchHandlers(t *testing.T) {
	// Kinds whose updates other controllers make (the Ray autoscaler, Kueue):
	// creation fails closed, updates fail open (package doc).
	failOpenUpdates := map[string]bool{"ray.io/rayclusters": true, "ray.io/rayjobs": true, "ray.io/rayservices": true}
	data, err := os.ReadFile(repoFile("config/webhook/manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type hook struct {
		Name         string `json:"name"`
		ClientConfig struct {
			Service struct {
				Path string `json:"path"`
			} `json:"service"`
		} `json:"clientConfig"`
		FailurePolicy string `json:"failurePolicy"`
		SideEffects   string `json:"sideEffects"`
		Rules         []struct {
			APIGroups  []string `json:"apiGroups"`
			Resources  []string `json:"resources"`
			Operations []string `json:"operations"`
		} `json:"rules"`
	}
	var paths []string
	updates := map[string]bool{}
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var cfg struct {
			Kind     string `json:"kind"`
			Webhooks []hook `json:"webhooks"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
			t.Fatal(err)
		}
		prefix := map[string]string{"ValidatingWebhookConfiguration": "v", "MutatingWebhookConfiguration": "m"}[cfg.Kind]
		for _, h := range cfg.Webhooks {
			paths = append(paths, h.ClientConfig.Service.Path)
			if len(h.Rules) != 1 || len(h.Rules[0].Resources) != 1 || len(h.Rules[0].APIGroups) != 1 {
				t.Errorf("%s: want one rule for one resource, got %+v", h.Name, h.Rules)
				continue
			}
			r := h.Rules[0]
			kind := strings.TrimSuffix(r.Resources[0], "s")
			wantName, wantPolicy, wantOps := prefix+kind+"."+r.APIGroups[0], "Fail", []string{"CREATE", "UPDATE"}
			if failOpenUpdates[r.APIGroups[0]+"/"+r.Resources[0]] {
				wantOps = []string{"CREATE"}
				if slices.Equal(r.Operations, []string{"UPDATE"}) {
					wantName, wantPolicy, wantOps = prefix+kind+"-update."+r.APIGroups[0], "Ignore", []string{"UPDATE"}
					updates[r.Resources[0]] = true
					paths = paths[:len(paths)-1] // the create webhook's path, counted once
				}
			}
			if h.Name != wantName || h.FailurePolicy != wantPolicy || h.SideEffects != "None" ||
				!slices.Equal(r.Operations, wantOps) {
				t.Errorf("%s: name/failurePolicy/sideEffects/operations = %s/%s/%s/%v, want %s/%s/None/%v",
					h.Name, h.Name, h.FailurePolicy, h.SideEffects, r.Operations, wantName, wantPolicy, wantOps)
			}
		}
	}
	for gr := range failOpenUpdates {
		if res := gr[strings.Index(gr, "/")+1:]; !updates[res] {
			t.Errorf("no fail-open UPDATE webhook for %s", gr)
		}
	}
	slices.Sort(paths)
	want := slices.Sorted(slices.Values(slices.Concat(rayPaths, slurmPaths, trainerPaths)))
	if !slices.Equal(paths, want) {
		t.Errorf("manifest paths:\n%v\nwant:\n%v", paths, want)
	}
}
