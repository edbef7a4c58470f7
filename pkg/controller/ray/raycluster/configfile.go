package raycluster

import (
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
)

// ConfigFileEnv names the KubeRay Configuration file the RayCluster
// controller reads at start-up; the chart sets it when
// raycluster.headSidecarContainers, workerSidecarContainers or
// defaultContainerEnvs are given.
const ConfigFileEnv = "GANTRY_RAYCLUSTER_CONFIG"

// KubeRay's configuration file (ray-operator --config): apiVersion
// config.ray.io/v1alpha1, kind Configuration.
const (
	configFileAPIVersion = "config.ray.io/v1alpha1"
	configFileKind       = "Configuration"
)

// configFile is the part of KubeRay's Configuration (apis/config/v1alpha1)
// that shapes the Pods of a RayCluster. Field names are KubeRay's.
type configFile struct {
	APIVersion              string             `json:"apiVersion"`
	Kind                    string             `json:"kind"`
	HeadSidecarContainers   []corev1.Container `json:"headSidecarContainers,omitempty"`
	WorkerSidecarContainers []corev1.Container `json:"workerSidecarContainers,omitempty"`
	DefaultContainerEnvs    []corev1.EnvVar    `json:"defaultContainerEnvs,omitempty"`
	BatchScheduler          string             `json:"batchScheduler,omitempty"`
	EnableBatchScheduler    bool               `json:"enableBatchScheduler,omitempty"`
}

// managerLevelKeys are the other keys of KubeRay's Configuration: the
// operator process's own settings, which Gantry's manager takes as flags
// (--namespaces, --leader-elect, --kube-api-qps, ...). A file that carries
// them is read and they are reported as ignored.
var managerLevelKeys = []string{
	"burst", "deleteRayJobAfterJobFinishes", "enableLeaderElection",
	"enableMetrics", "leaderElectionNamespace", "logFile", "logFileEncoder", "logStdoutEncoder", "metricsAddr",
	"probeAddr", "qps", "reconcileConcurrency", "useKubernetesProxy", "watchNamespace",
}

// LoadConfigFile applies KubeRay's Configuration file at path to cfg: the
// head and worker sidecar containers and the default container env vars
// are added to every Ray Pod, as with KubeRay's --config. It returns the
// keys it ignored (KubeRay's operator-level settings). A key KubeRay does
// not have, a wrong apiVersion or kind, or a sidecar without a name or
// image is an error: a typo must not pass unnoticed.
func LoadConfigFile(path string, cfg *Config) (ignored []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the RayCluster configuration: %w", err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for k := range keys {
		if slices.Contains(managerLevelKeys, k) {
			ignored = append(ignored, k)
			delete(keys, k)
		}
	}
	slices.Sort(ignored)
	rest, err := yaml.Marshal(keys)
	if err != nil {
		return nil, err
	}
	var f configFile
	if err := yaml.UnmarshalStrict(rest, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.APIVersion != configFileAPIVersion || f.Kind != configFileKind {
		return nil, fmt.Errorf("%s: want apiVersion %s and kind %s, got %q and %q", path, configFileAPIVersion, configFileKind, f.APIVersion, f.Kind)
	}
	var problems []string
	for what, containers := range map[string][]corev1.Container{"headSidecarContainers": f.HeadSidecarContainers, "workerSidecarContainers": f.WorkerSidecarContainers} {
		for i, c := range containers {
			if c.Name == "" || c.Image == "" {
				problems = append(problems, fmt.Sprintf("%s[%d] needs a name and an image", what, i))
			}
		}
	}
	for i, e := range f.DefaultContainerEnvs {
		if e.Name == "" {
			problems = append(problems, fmt.Sprintf("defaultContainerEnvs[%d] needs a name", i))
		}
	}
	scheduler, err := podspec.ValidateBatchScheduler(f.BatchScheduler, f.EnableBatchScheduler)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("%s: %s", path, strings.Join(problems, "; "))
	}
	cfg.Build.HeadSidecarContainers = f.HeadSidecarContainers
	cfg.Build.WorkerSidecarContainers = f.WorkerSidecarContainers
	cfg.Build.DefaultContainerEnvs = f.DefaultContainerEnvs
	cfg.Build.BatchScheduler = scheduler
	return ignored, nil
}
