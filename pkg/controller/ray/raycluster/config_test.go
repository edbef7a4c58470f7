package raycluster

import (
	"strings"
	"testing"

	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestDeterministicHeadPodName follows KubeRay v1.6.2: with the operator's
// ENABLE_DETERMINISTIC_HEAD_POD_NAME=true (utils.IsDeterministicHeadPodNameEnabled,
// case-insensitive "true") the head Pod is named utils.PodName(cluster,
// head, false), "<first 50 characters of the cluster name>-head" in lower
// case, instead of generateName "<same>-head-".
func TestDeterministicHeadPodName(t *testing.T) {
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == "ENABLE_DETERMINISTIC_HEAD_POD_NAME" {
				return v
			}
			return ""
		}
	}
	for v, want := range map[string]bool{"": false, "false": false, "true": true, "TRUE": true, "True": true} {
		if got := ConfigFromEnv(env(v), nil).Build.DeterministicHeadPodName; got != want {
			t.Errorf("ENABLE_DETERMINISTIC_HEAD_POD_NAME=%q: DeterministicHeadPodName = %v, want %v", v, got, want)
		}
	}

	long := "Cluster-" + strings.Repeat("x", 60)
	tests := []struct {
		name          string
		cluster       string
		deterministic bool
		wantName      string
		wantGenerate  string
	}{
		{name: "off", cluster: "rc", wantGenerate: "rc-head-"},
		{name: "on", cluster: "rc", deterministic: true, wantName: "rc-head"},
		{name: "on, long name", cluster: long, deterministic: true, wantName: strings.ToLower(long[:50]) + "-head"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := ConfigFromEnv(env(map[bool]string{true: "true"}[tc.deterministic]), nil).Build
			cluster := raytesting.MakeRayCluster(tc.cluster, "ns").Obj()
			cluster.Spec.HeadGroupSpec.Template.Name = "ignored"
			pod := podspec.BuildHeadPod(cluster, opts)
			if pod.Name != tc.wantName || pod.GenerateName != tc.wantGenerate {
				t.Errorf("name %q generateName %q, want %q %q", pod.Name, pod.GenerateName, tc.wantName, tc.wantGenerate)
			}
			// Workers always get generated names.
			w := raytesting.MakeRayCluster(tc.cluster, "ns").WorkerGroup("cpu", 1)
			worker := podspec.BuildWorkerPod(w.Obj(), w.Group("cpu"), podspec.WorkerReplica{}, opts)
			if worker.Name != "" || worker.GenerateName == "" {
				t.Errorf("worker name %q generateName %q, want a generated name", worker.Name, worker.GenerateName)
			}
		})
	}
}
