package kuberay

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	krayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	kcommon "github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	kutils "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/rayservice"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// What this file compares: for a RayService built around each RayCluster
// spec of the corpus (KubeRay v1.7.0's sample RayClusters, and the
// rayClusterConfig of its sample RayServices), the objects Gantry's
// RayService controller makes and KubeRay v1.6.2's builders make (unchanged
// at v1.7.0: common/service.go and the hash helper did not change):
//
//   - the cluster's spec hash (ray.io/hash-without-replicas-and-workers-to-delete),
//     so a cluster KubeRay made for a RayService is recognised by Gantry
//     and none is replaced on migration;
//   - the <name>-head-svc and <name>-serve-svc Services: name, labels,
//     selector, ports (as a set: KubeRay's order is a map's), type,
//     headless-ness and annotations.
//
// Deliberate differences, normalized here and listed in docs/raycluster.md:
// Gantry's Services carry app.kubernetes.io/managed-by=gantry (its cache
// sees only such objects) and give their ports protocol TCP explicitly
// where KubeRay leaves the API server's default, TCP.

type serviceCase struct {
	name string
	spec rayv1.RayClusterSpec
	// kspec is the same document read with KubeRay's types, as KubeRay's
	// operator reads the stored object.
	kspec krayv1.RayClusterSpec
}

func readClusterSpecs(t *testing.T, dir string, kind string) []serviceCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nested, err := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, nested...)
	var out []serviceCase
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(raw), "\n---") {
			var head struct {
				Kind string `json:"kind"`
			}
			if yaml.Unmarshal([]byte(doc), &head) != nil || head.Kind != kind {
				continue
			}
			name := filepath.Base(f) + "#" + string(rune('0'+i))
			switch kind {
			case rayv1.RayClusterKind:
				rc, krc := &rayv1.RayCluster{}, &krayv1.RayCluster{}
				if err := errors.Join(yaml.Unmarshal([]byte(doc), rc), yaml.Unmarshal([]byte(doc), krc)); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				out = append(out, serviceCase{name, rc.Spec, krc.Spec})
			case rayv1.RayServiceKind:
				rs, krs := &rayv1.RayService{}, &krayv1.RayService{}
				if err := errors.Join(yaml.Unmarshal([]byte(doc), rs), yaml.Unmarshal([]byte(doc), krs)); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				out = append(out, serviceCase{name, rs.Spec.RayClusterSpec, krs.Spec.RayClusterSpec})
			}
		}
	}
	return out
}

// sameOnKubeRays reports whether spec reads the same through KubeRay
// v1.6.2's types (no field only v1.7.0 knows is set), nulls and empty
// objects aside (KubeRay's encoding writes some that Gantry's omits).
func sameOnKubeRays(t *testing.T, spec *rayv1.RayClusterSpec) bool {
	a, _ := json.Marshal(spec)
	b, _ := json.Marshal(kuberayOf[krayv1.RayClusterSpec](t, spec))
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	xa, _ := json.Marshal(dropEmpty(x))
	ya, _ := json.Marshal(dropEmpty(y))
	return string(xa) == string(ya)
}

func dropEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e = dropEmpty(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		for i := range v {
			v[i] = dropEmpty(v[i])
		}
		return v
	}
	return v
}

func serviceCorpus(t *testing.T) []serviceCase {
	cases := readClusterSpecs(t, "../../wrappers/ray/testdata/samples", rayv1.RayClusterKind)
	cases = append(cases, readClusterSpecs(t, "../../wrappers/ray/testdata/rayservice-samples", rayv1.RayServiceKind)...)
	if len(cases) < 40 {
		t.Fatalf("only %d cluster specs in the corpus", len(cases))
	}
	return cases
}

func TestRayServiceClusterHashMatchesKubeRays(t *testing.T) {
	compared := 0
	for _, c := range serviceCorpus(t) {
		if !sameOnKubeRays(t, &c.spec) {
			continue
		}
		compared++
		svc := &rayv1.RayService{}
		svc.Name, svc.Namespace = "svc", "team-a"
		svc.Spec.RayClusterSpec = c.spec
		got := rayservice.BuildCluster(svc, "svc-abcde", "v1.7.0").Annotations[rayv1.HashWithoutReplicasAndWorkersToDeleteKey]
		spec := c.kspec.DeepCopy()
		spec.Suspend = nil
		want, err := kutils.GenerateHashWithoutReplicasAndWorkersToDelete(*spec)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: spec hash %s, KubeRay's %s", c.name, got, want)
		}
	}
	if compared < 30 {
		t.Fatalf("only %d specs compared", compared)
	}
	t.Logf("%d cluster specs hash as KubeRay's", compared)
}

func TestRayServiceServicesMatchKubeRays(t *testing.T) {
	ctx := context.Background()
	compared := 0
	var cases []serviceCase
	for _, c := range serviceCorpus(t) {
		cases = append(cases, c)
		// The same spec with headServiceAnnotations, which no sample
		// sets: they are the cluster's head Service's, not the
		// RayService's <name>-head-svc.
		annotated := serviceCase{name: c.name + " with headServiceAnnotations", spec: *c.spec.DeepCopy()}
		annotated.spec.HeadServiceAnnotations = map[string]string{"example.com/lb": "internal"}
		cases = append(cases, annotated)
	}
	for _, c := range cases {
		if !sameOnKubeRays(t, &c.spec) {
			continue
		}
		svc := &rayv1.RayService{}
		svc.Name, svc.Namespace = "svc", "team-a"
		svc.Spec.RayClusterSpec = c.spec
		cluster := rayservice.BuildCluster(svc, "svc-abcde", "v1.7.0")
		ksvc := kuberayOf[krayv1.RayService](t, svc)
		kcluster := kuberayOf[krayv1.RayCluster](t, cluster)

		khead, err := kcommon.BuildHeadServiceForRayService(ctx, *ksvc, *kcluster)
		if err != nil {
			t.Fatalf("%s: KubeRay's head Service: %v", c.name, err)
		}
		same(t, c.name+": head Service", comparable(khead), comparable(rayservice.BuildHeadService(svc, cluster, podspec.DefaultBuildOptions())))

		kserve, kerr := kcommon.BuildServeServiceForRayService(ctx, *ksvc, *kcluster)
		serve, gerr := rayservice.BuildServeService(svc, cluster)
		if (kerr != nil) != (gerr != nil) {
			t.Errorf("%s: Serve Service errors differ: KubeRay %v, Gantry %v", c.name, kerr, gerr)
			continue
		}
		if kerr == nil {
			same(t, c.name+": Serve Service", comparable(kserve), comparable(serve))
		}
		compared++
	}
	if compared < 30 {
		t.Fatalf("only %d specs compared", compared)
	}
	t.Logf("%d RayServices' Services match KubeRay's", compared)
}

// comparable is the part of a Service both sides must agree on, with the
// deliberate differences taken out.
func comparable(svc *corev1.Service) map[string]any {
	labels := map[string]string{}
	for k, v := range svc.Labels {
		if k == builder.LabelManagedBy {
			continue
		}
		labels[k] = v
	}
	ports := make([]corev1.ServicePort, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		if p.Protocol == corev1.ProtocolTCP {
			p.Protocol = ""
		}
		ports[i] = p
	}
	slices.SortFunc(ports, func(a, b corev1.ServicePort) int { return strings.Compare(a.Name, b.Name) })
	annotations := svc.Annotations
	if len(annotations) == 0 {
		annotations = nil
	}
	return map[string]any{
		"name": svc.Name, "namespace": svc.Namespace, "labels": labels, "annotations": annotations,
		"selector": svc.Spec.Selector, "ports": ports, "type": svc.Spec.Type,
		"clusterIP": svc.Spec.ClusterIP, "publishNotReady": svc.Spec.PublishNotReadyAddresses,
	}
}
