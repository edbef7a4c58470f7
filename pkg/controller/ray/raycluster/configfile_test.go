package raycluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func writeConfigFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadConfigFile reads a file as KubeRay's Helm chart renders it
// (helm-chart/kuberay-operator/templates/configmap.yaml at v1.6.2) and
// builds Pods with its sidecars and env vars.
func TestLoadConfigFile(t *testing.T) {
	path := writeConfigFile(t, `apiVersion: config.ray.io/v1alpha1
kind: Configuration
enableLeaderElection: true
reconcileConcurrency: 4
defaultContainerEnvs:
- name: RAY_LOG_TO_STDERR
  value: "1"
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:3.2
workerSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:3.2
- name: exporter
  image: example.com/exporter:1
`)
	cfg := ConfigFromEnv(func(string) string { return "" }, nil)
	ignored, err := LoadConfigFile(path, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ignored, []string{"enableLeaderElection", "reconcileConcurrency"}) {
		t.Errorf("ignored %v", ignored)
	}
	w := raytesting.MakeRayCluster("rc", "ns").WorkerGroup("cpu", 1)
	head := podspec.BuildHeadPod(w.Obj(), cfg.Build)
	worker := podspec.BuildWorkerPod(w.Obj(), w.Group("cpu"), podspec.WorkerReplica{}, cfg.Build)
	var headNames, workerNames []string
	for _, c := range head.Spec.Containers {
		headNames = append(headNames, c.Name)
	}
	for _, c := range worker.Spec.Containers {
		workerNames = append(workerNames, c.Name)
	}
	if len(headNames) != 2 || headNames[1] != "fluentbit" {
		t.Errorf("head containers %v, want the Ray container and fluentbit", headNames)
	}
	if len(workerNames) != 3 || workerNames[1] != "fluentbit" || workerNames[2] != "exporter" {
		t.Errorf("worker containers %v, want the Ray container, fluentbit and exporter", workerNames)
	}
	found := false
	for _, e := range head.Spec.Containers[0].Env {
		found = found || (e.Name == "RAY_LOG_TO_STDERR" && e.Value == "1")
	}
	if !found {
		t.Errorf("the default env var is not on the head's Ray container: %v", head.Spec.Containers[0].Env)
	}
}

func TestLoadConfigFileRefusesMistakes(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"a key KubeRay does not have": {"apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nheadSidecarContainer: []\n", `unknown field "headSidecarContainer"`},
		"the wrong kind":              {"apiVersion: config.ray.io/v1alpha1\nkind: Config\n", "want apiVersion config.ray.io/v1alpha1 and kind Configuration"},
		"a sidecar without an image":  {"apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nworkerSidecarContainers:\n- name: x\n", "workerSidecarContainers[0] needs a name and an image"},
		"an env var without a name":   {"apiVersion: config.ray.io/v1alpha1\nkind: Configuration\ndefaultContainerEnvs:\n- value: x\n", "defaultContainerEnvs[0] needs a name"},
		"not YAML":                    {"a: [", "config.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := ConfigFromEnv(func(string) string { return "" }, nil)
			_, err := LoadConfigFile(writeConfigFile(t, tc.text), &cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if len(cfg.Build.HeadSidecarContainers)+len(cfg.Build.WorkerSidecarContainers)+len(cfg.Build.DefaultContainerEnvs) > 0 {
				t.Error("a refused file changed the configuration")
			}
		})
	}
	if _, err := LoadConfigFile(filepath.Join(t.TempDir(), "missing.yaml"), &Config{}); err == nil {
		t.Error("a missing file was accepted")
	}
}
