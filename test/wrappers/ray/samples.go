package raytesting

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// samplesDir is testdata/samples beside this file, wherever the test that
// reads it runs.
func samplesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "samples")
}

// The seeds of the RayCluster fuzz targets (validation and podspec) are KubeRay's own samples
// (ray-operator/config/samples at v1.6.2, copied to testdata/samples), as
// JSON, plus a few hostile variants of the first one.

// SampleClusters returns the RayCluster documents of testdata/samples as
// JSON.
func SampleClusters(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no samples: %v", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var meta struct{ Kind string }
			if yaml.Unmarshal(doc, &meta) != nil || meta.Kind != rayv1.RayClusterKind {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		tb.Fatal("no RayCluster in testdata/samples")
	}
	return out
}

// HostileClusters are variants of a sample with the inputs issue #13 is
// about (validation and pod building must hold on them): odd group names, shell metacharacters in rayStartParams, odd
// Ray resource names and quantities.
func HostileClusters(tb testing.TB, base []byte) [][]byte {
	tb.Helper()
	mutate := func(f func(c *rayv1.RayCluster)) []byte {
		c := &rayv1.RayCluster{}
		if err := json.Unmarshal(base, c); err != nil {
			tb.Fatal(err)
		}
		f(c)
		out, err := json.Marshal(c)
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	return [][]byte{
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "1; touch /tmp/x", "object-manager-port": "$(id)", "x": "a\nb"}
		}),
		mutate(func(c *rayv1.RayCluster) {
			if len(c.Spec.WorkerGroupSpecs) > 0 {
				c.Spec.WorkerGroupSpecs[0].GroupName = "Group_With.Odd-Name"
				c.Spec.WorkerGroupSpecs[0].NumOfHosts = 2
			}
		}),
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.HeadGroupSpec.Resources = map[string]string{"custom": "1", "CPU": "2", "nvidia.com/gpu": "1"}
			c.Spec.HeadGroupSpec.Labels = map[string]string{"ray.io/zone": "a"}
		}),
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.EnableInTreeAutoscaling = ptr.To(true)
			c.Spec.HeadGroupSpec.Template.Spec.Containers[0].Command = []string{"echo", "hi"}
			c.Annotations = map[string]string{rayv1.RayFTEnabledAnnotationKey: "true"}
		}),
	}
}

func DecodeCluster(data []byte) (*rayv1.RayCluster, bool) {
	c := &rayv1.RayCluster{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, false
	}
	// The API server always sets these.
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if c.UID == "" {
		c.UID = "0e7f0b1c-uid"
	}
	return c, true
}
