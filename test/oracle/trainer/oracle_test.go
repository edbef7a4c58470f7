// Package trainer_test checks Gantry's TrainJob rendering against Kubeflow
// Trainer v2.3.0's own runtime framework. Each input (a runtime and a
// TrainJob) is built twice, by Trainer's ClusterTrainingRuntime.NewObjects
// and by Gantry's runtime.NewObjects, and the objects are compared as JSON.
// Only the differences in deliberate (deliberate.go, each with its reason,
// and docs/trainjob.md) are removed before the comparison; any other
// difference fails the test.
package trainer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	upstream "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	upstreamcore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	upstreamtesting "github.com/kubeflow/trainer/v2/pkg/util/testing"

	gantry "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	gantryruntime "github.com/gantry-dev/gantry/pkg/runtime"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/coscheduling"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/volcano"
)

// runtimeFile is one ClusterTrainingRuntime manifest of the corpus.
type runtimeFile struct {
	origin string // "gantry" or "trainer"
	path   string
	doc    map[string]any
}

// name is the runtime's metadata.name.
func (r runtimeFile) name() string {
	md, _ := r.doc["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

// input is one case: a runtime and a TrainJob spec built against it.
type input struct {
	name    string
	runtime runtimeFile
	job     map[string]any
}

// trainerModuleDir is where Go keeps the Trainer v2.3.0 module this test
// imports: its manifests and examples are corpus too.
func trainerModuleDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(modCache(t), "github.com", "kubeflow", "trainer", "v2@v2.3.0")
	if _, err := os.Stat(filepath.Join(dir, "manifests")); err != nil {
		t.Fatalf("the Trainer v2.3.0 module is not in the module cache (go mod download github.com/kubeflow/trainer/v2@v2.3.0): %v", err)
	}
	return dir
}

// readRuntimes reads every ClusterTrainingRuntime document in the YAML
// files under dir (recursively).
func readRuntimes(t *testing.T, origin, dir string) []runtimeFile {
	t.Helper()
	var out []runtimeFile
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || filepath.Base(path) == "kustomization.yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, part := range strings.Split(string(data), "\n---") {
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if isRuntime(doc) {
				out = append(out, runtimeFile{origin: origin, path: path, doc: asClusterRuntime(doc)})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no ClusterTrainingRuntime under %s", dir)
	}
	return out
}

// variants are the TrainJob specs every runtime is built with: what users
// and the Kubeflow SDK send.
var variants = []struct {
	name string
	spec string
}{
	{"no trainer", `{}`},
	{"image only", `{"trainer":{"image":"example.com/train:1"}}`},
	{"image and command", `{"trainer":{"image":"example.com/train:1","command":["python","train.py"],"args":["--epochs","1"]}}`},
	{"numNodes", `{"trainer":{"numNodes":3}}`},
	{"numProcPerNode", `{"trainer":{"numNodes":2,"numProcPerNode":4}}`},
	{"cpu resources", `{"trainer":{"resourcesPerNode":{"requests":{"cpu":"3","memory":"4Gi"},"limits":{"cpu":"3","memory":"4Gi"}}}}`},
	{"fractional cpu", `{"trainer":{"resourcesPerNode":{"limits":{"cpu":"2500m"}}}}`},
	{"gpu resources", `{"trainer":{"numNodes":2,"resourcesPerNode":{"limits":{"nvidia.com/gpu":"2","cpu":"8"}}}}`},
	{"env", `{"trainer":{"env":[{"name":"FOO","value":"bar"},{"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]}}`},
	{"everything", `{"trainer":{"image":"example.com/train:2","command":["bash","-c","run"],"numNodes":4,"numProcPerNode":2,
		"resourcesPerNode":{"limits":{"nvidia.com/gpu":"1"}},"env":[{"name":"FOO","value":"bar"}]}}`},
	{"runtime patch", `{"runtimePatches":[{"manager":"example.com/kueue","trainingRuntimeSpec":{"template":{
		"metadata":{"labels":{"team":"a"},"annotations":{"note":"x"}},
		"spec":{"replicatedJobs":[{"name":"node","template":{"metadata":{"labels":{"rj":"node"}},"spec":{"template":{
			"metadata":{"labels":{"pod":"node"}},
			"spec":{"nodeSelector":{"pool":"gpu"},"tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],
				"serviceAccountName":"trainer","schedulingGates":[{"name":"example.com/gate"}],
				"containers":[{"name":"node","volumeMounts":[{"name":"data","mountPath":"/data"}],"securityContext":{"runAsNonRoot":true}}],
				"volumes":[{"name":"data","emptyDir":{}}]}}}}}]}}}}]}`},
	// Both refuse env on the node container in a patch.
	{"runtime patch env", `{"runtimePatches":[{"manager":"example.com/m","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{
		"containers":[{"name":"node","env":[{"name":"PATCHED","value":"1"}]}]}}}}}]}}}}]}`},
	{"runtime patch, initializer step", `{"initializer":{"model":{"storageUri":"hf://m"}},"runtimePatches":[{"manager":"example.com/m","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[
		{"name":"model-initializer","template":{"spec":{"template":{"spec":{"nodeSelector":{"disk":"ssd"}}}}}}]}}}}]}`},
	{"two runtime patches", `{"runtimePatches":[
		{"manager":"example.com/a","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{"nodeSelector":{"a":"1"}}}}}}]}}}},
		{"manager":"example.com/b","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{"nodeSelector":{"b":"2"}}}}}}]}}}}]}`},
	{"initializers", `{"initializer":{"dataset":{"storageUri":"hf://tatsu-lab/alpaca","env":[{"name":"DS","value":"1"}]},
		"model":{"storageUri":"hf://meta-llama/Llama-3.2-1B","secretRef":{"name":"hf-token"}}}}`},
	{"suspended", `{"suspend":true,"trainer":{"image":"example.com/train:1"}}`},
	{"labels and annotations", `{"labels":{"team":"a"},"annotations":{"cost":"b"},"trainer":{"image":"example.com/train:1"}}`},
	{"managedBy", `{"managedBy":"trainer.kubeflow.org/trainjob-controller","trainer":{"numNodes":2}}`},
}

// corpus is every runtime × every variant, plus the TrainJobs of Trainer's
// examples against the runtime they name.
func corpus(t *testing.T) []input {
	t.Helper()
	up := trainerModuleDir(t)
	runtimes := append(readRuntimes(t, "gantry", filepath.Join(repoRoot(t), "config", "runtimes")),
		readRuntimes(t, "trainer", filepath.Join(up, "manifests", "base", "runtimes"))...)
	// Trainer ships no Flux runtime; its example (flux-distributed) is built
	// with every variant, and the example TrainJobs in the other files of
	// examples/flux find it by name.
	fluxRuntimes := readRuntimes(t, "trainer", filepath.Join(up, "examples", "flux"))
	runtimes = append(runtimes, fluxRuntimes...)
	for _, rt := range fluxRuntimes {
		// Two tasks per node, and GPUs on the runtime's node container
		// (the TrainJob's resourcesPerNode, when set, replaces them).
		raw, _ := json.Marshal(rt.doc)
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		path(doc, "spec", "mlPolicy").(map[string]any)["flux"] = map[string]any{"numProcPerNode": 2}
		for _, rj := range path(doc, "spec", "template", "spec", "replicatedJobs").([]any) {
			for _, c := range path(rj.(map[string]any), "template", "spec", "template", "spec", "containers").([]any) {
				c.(map[string]any)["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": "4"}}
			}
		}
		runtimes = append(runtimes, runtimeFile{origin: "trainer+flux 2 procs and gpus", path: rt.path, doc: doc})
	}
	for _, doc := range edgeRuntimes {
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("edge runtime: %v", err)
		}
		rt := runtimeFile{origin: "edge", path: "oracle_test.go", doc: m}
		cosched, err := withPolicy(rt, policyVariants[0].name, policyVariants[0].policy, policyVariants[0].metadata)
		if err != nil {
			t.Fatal(err)
		}
		runtimes = append(runtimes, rt, cosched)
	}
	for _, rt := range readRuntimes(t, "trainer", filepath.Join(up, "manifests", "base", "runtimes")) {
		for _, pv := range policyVariants {
			v, err := withPolicy(rt, pv.name, pv.policy, pv.metadata)
			if err != nil {
				t.Fatal(err)
			}
			runtimes = append(runtimes, v)
		}
	}
	var out []input
	for _, rt := range runtimes {
		for _, v := range variants {
			var spec map[string]any
			if err := json.Unmarshal([]byte(v.spec), &spec); err != nil {
				t.Fatalf("variant %s: %v", v.name, err)
			}
			out = append(out, input{name: rt.origin + "/" + rt.name() + "/" + v.name, runtime: rt, job: spec})
			if path(rt.doc, "spec", "mlPolicy", "flux") != nil {
				// Trainer builds a Flux TrainJob only with spec.trainer.numNodes
				// (it dereferences the field), so each variant again with it.
				if withNodes, ok := withTrainerNumNodes(spec, 2); ok {
					out = append(out, input{name: rt.origin + "/" + rt.name() + "/" + v.name + ", numNodes 2", runtime: rt, job: withNodes})
				}
			}
		}
		if path(rt.doc, "spec", "mlPolicy", "flux") != nil {
			// Words that need quoting in the command line Flux's entrypoint
			// gets (see normalizeFluxCommand), and one that does not (--lr=0.1).
			var spec map[string]any
			if err := json.Unmarshal([]byte(fluxQuotingSpec), &spec); err != nil {
				t.Fatal(err)
			}
			out = append(out, input{name: rt.origin + "/" + rt.name() + "/command that needs quoting", runtime: rt, job: spec})
			// Trainer's Flux validation: both must refuse these.
			out = append(out, input{name: rt.origin + "/" + rt.name() + "/numProcPerNode 0", runtime: rt,
				job: map[string]any{"trainer": map[string]any{"numNodes": 2, "numProcPerNode": 0}}})
			reserved := withInitContainer(t, rt, map[string]any{"name": "flux-installer", "image": "busybox"})
			out = append(out, input{name: reserved.origin + "/" + rt.name() + "/numNodes 2", runtime: reserved,
				job: map[string]any{"trainer": map[string]any{"numNodes": 2}}})
		}
	}
	byName := map[string]runtimeFile{}
	for _, rt := range runtimes {
		if rt.origin == "trainer" {
			byName[rt.name()] = rt
		}
	}
	out = append(out, exampleJobs(t, filepath.Join(up, "examples"), byName)...)
	return out
}

// exampleJobs are the TrainJobs in Trainer's examples whose runtime is one
// of Trainer's shipped ClusterTrainingRuntimes (or defined in the same
// file).
func exampleJobs(t *testing.T, dir string, runtimes map[string]runtimeFile) []input {
	t.Helper()
	var out []input
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		local := map[string]runtimeFile{}
		var jobs []map[string]any
		for _, part := range strings.Split(string(data), "\n---") {
			var doc map[string]any
			if yaml.Unmarshal([]byte(part), &doc) != nil {
				continue
			}
			switch {
			case isRuntime(doc):
				rt := runtimeFile{origin: "trainer", path: path, doc: asClusterRuntime(doc)}
				local[rt.name()] = rt
			case doc["kind"] == "TrainJob":
				jobs = append(jobs, doc)
			}
		}
		for _, job := range jobs {
			spec, _ := job["spec"].(map[string]any)
			ref, _ := spec["runtimeRef"].(map[string]any)
			name, _ := ref["name"].(string)
			rt, ok := local[name]
			if !ok {
				rt, ok = runtimes[name]
			}
			if !ok {
				continue
			}
			delete(spec, "runtimeRef")
			rel, _ := filepath.Rel(dir, path)
			out = append(out, input{name: "example/" + rel, runtime: rt, job: spec})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withInitContainer is a copy of the runtime whose trainer step (job
// "node") has the init container c.
func withInitContainer(t *testing.T, rt runtimeFile, c map[string]any) runtimeFile {
	t.Helper()
	raw, _ := json.Marshal(rt.doc)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, rj := range path(doc, "spec", "template", "spec", "replicatedJobs").([]any) {
		if m := rj.(map[string]any); m["name"] == "node" {
			path(m, "template", "spec", "template", "spec").(map[string]any)["initContainers"] = []any{c}
		}
	}
	return runtimeFile{origin: rt.origin + "+init container " + fmt.Sprint(c["name"]), path: rt.path, doc: doc}
}

// fluxQuotingSpec is a TrainJob whose command and args hold a space, quotes
// and an empty argument.
const fluxQuotingSpec = `{"trainer":{"numNodes":2,"command":["python","-c","print('hello world')"],"args":["--name","a b","--lr=0.1",""]}}`

// withTrainerNumNodes is a copy of a TrainJob spec with spec.trainer.numNodes
// set to n; false when the spec sets it already.
func withTrainerNumNodes(spec map[string]any, n int) (map[string]any, bool) {
	raw, _ := json.Marshal(spec)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, false
	}
	tr, _ := out["trainer"].(map[string]any)
	if tr == nil {
		tr = map[string]any{}
		out["trainer"] = tr
	}
	if _, set := tr["numNodes"]; set {
		return nil, false
	}
	tr["numNodes"] = n
	return out, true
}

// isRuntime: a ClusterTrainingRuntime or a TrainingRuntime.
func isRuntime(doc map[string]any) bool {
	return doc["kind"] == "ClusterTrainingRuntime" || doc["kind"] == "TrainingRuntime"
}

// asClusterRuntime renders a TrainingRuntime as the ClusterTrainingRuntime
// of the same spec: both frameworks build either kind from its spec alone.
func asClusterRuntime(doc map[string]any) map[string]any {
	if doc["kind"] == "TrainingRuntime" {
		doc["kind"] = "ClusterTrainingRuntime"
		if md, ok := doc["metadata"].(map[string]any); ok {
			delete(md, "namespace")
		}
	}
	return doc
}

// edgeRuntimes are runtimes written for the corner cases Trainer's own
// runtimes do not reach: a replicated job that is no TrainJob step, with
// replicas and parallelism above 1; an unnamed port on the trainer's
// container; pod-level resources; initializer jobs named as such but not
// labelled as steps. Each is also built with a coscheduling policy.
var edgeRuntimes = []string{`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime","metadata":{"name":"edge-torch"},
 "spec":{"mlPolicy":{"numNodes":2,"torch":{}},"template":{"spec":{"replicatedJobs":[
  {"name":"node","template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},"spec":{"template":{"spec":{
    "resources":{"requests":{"cpu":"2","memory":"1Gi"}},
    "containers":[{"name":"node","image":"pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime","ports":[{"containerPort":8080}],
      "resources":{"requests":{"cpu":"1"}}}]}}}}},
  {"name":"cache","replicas":2,"template":{"spec":{"parallelism":2,"completions":2,"template":{"spec":{
    "containers":[{"name":"cache","image":"redis:7","resources":{"requests":{"cpu":"500m","memory":"256Mi"}}}]}}}}}]}}}}`,
	`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime","metadata":{"name":"edge-unlabelled-initializers"},
 "spec":{"mlPolicy":{"numNodes":1,"torch":{}},"template":{"spec":{"replicatedJobs":[
  {"name":"dataset-initializer","replicas":2,"template":{"spec":{"template":{"spec":{"containers":[{"name":"dataset-initializer","image":"ghcr.io/kubeflow/trainer/dataset-initializer",
    "volumeMounts":[{"name":"initializer","mountPath":"/workspace"}]}]}}}}},
  {"name":"model-initializer","template":{"spec":{"template":{"spec":{"containers":[{"name":"model-initializer","image":"ghcr.io/kubeflow/trainer/model-initializer",
    "volumeMounts":[{"name":"initializer","mountPath":"/workspace"}]}]}}}}},
  {"name":"node","dependsOn":[{"name":"dataset-initializer","status":"Complete"}],"template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},"spec":{"template":{"spec":{
    "containers":[{"name":"node","image":"pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime","ports":[{"name":"metrics","containerPort":9090}]}]}}}}}]}}}}`,
	`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime","metadata":{"name":"edge-jax-port"},
 "spec":{"mlPolicy":{"numNodes":2,"jax":{}},"template":{"spec":{"replicatedJobs":[
  {"name":"node","template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},"spec":{"template":{"spec":{
    "containers":[{"name":"node","image":"nvcr.io/nvidia/jax:25.10-py3","ports":[{"containerPort":6006},{"name":"grpc","containerPort":29500}]}]}}}}}]}}}}`,
}

// policyVariants are the pod group policies every one of Trainer's runtimes
// is also built with (its shipped runtimes set none).
var policyVariants = []struct {
	name     string
	policy   string
	metadata string // the runtime template's metadata
}{
	{"coscheduling", `{"coscheduling":{"scheduleTimeoutSeconds":100}}`, `{}`},
	{"coscheduling, default timeout", `{"coscheduling":{}}`, `{}`},
	{"volcano", `{"volcano":{}}`, `{}`},
	{"volcano with queue and topology", `{"volcano":{"networkTopology":{"mode":"hard","highestTierAllowed":2}}}`,
		`{"annotations":{"scheduling.volcano.sh/queue-name":"research"}}`},
}

// withPolicy is a copy of the runtime with a pod group policy and
// template metadata.
func withPolicy(rt runtimeFile, name, policy, metadata string) (runtimeFile, error) {
	raw, _ := json.Marshal(rt.doc)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return rt, err
	}
	var p, md map[string]any
	if err := json.Unmarshal([]byte(policy), &p); err != nil {
		return rt, err
	}
	if err := json.Unmarshal([]byte(metadata), &md); err != nil {
		return rt, err
	}
	spec := doc["spec"].(map[string]any)
	spec["podGroupPolicy"] = p
	if len(md) > 0 {
		spec["template"].(map[string]any)["metadata"] = md
	}
	return runtimeFile{origin: rt.origin + "+" + name, path: rt.path, doc: doc}, nil
}

// trainJobDoc is the TrainJob of an input, as submitted.
func trainJobDoc(in input) map[string]any {
	spec := map[string]any{}
	for k, v := range in.job {
		spec[k] = v
	}
	spec["runtimeRef"] = map[string]any{"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": in.runtime.name()}
	job := map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": "job", "namespace": "default", "uid": "0c9a2c8e-4b5f-4d2b-9d62-3f1b5c0e7a11"},
		"spec":     spec,
	}
	return job
}

// decodeStored decodes doc, as the API server stores it under the side's
// CRDs, into obj.
func decodeStored(schemas crdSchemas, doc map[string]any, obj any) error {
	stored, err := schemas.asStored(doc)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, obj)
}

// buildUpstream renders the input with Trainer v2.3.0's framework. err is
// the error Trainer returns (its webhooks would refuse such a job), or its
// panic: Trainer's flux plugin dereferences spec.trainer and
// spec.trainer.numNodes unchecked, so its controller never builds such a job.
// A panic in the Flux plugin says so (fluxPanicPrefix).
func buildUpstream(ctx context.Context, crds crdSchemas, in input) (objs map[string]map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			where := ""
			if strings.Contains(string(debug.Stack()), "/pkg/runtime/framework/plugins/flux.") {
				where = " in its Flux plugin"
			}
			objs, err = nil, fmt.Errorf("trainer panicked%s: %v", where, r)
		}
	}()
	return buildUpstreamObjects(ctx, crds, in)
}

func buildUpstreamObjects(ctx context.Context, crds crdSchemas, in input) (map[string]map[string]any, error) {
	rt := &upstream.ClusterTrainingRuntime{}
	if err := decodeStored(crds, in.runtime.doc, rt); err != nil {
		return nil, fmt.Errorf("decoding the runtime as Trainer's type: %w", err)
	}
	job := &upstream.TrainJob{}
	if err := decodeStored(crds, trainJobDoc(in), job); err != nil {
		return nil, fmt.Errorf("decoding the TrainJob as Trainer's type: %w", err)
	}
	builder := upstreamtesting.NewClientBuilder().WithObjects(rt)
	c := builder.Build()
	// NewClusterTrainingRuntime delegates to the TrainingRuntime that
	// NewTrainingRuntime registers, as Trainer's own tests set it up.
	if _, err := upstreamcore.NewTrainingRuntime(ctx, c, upstreamtesting.AsIndex(builder), nil); err != nil {
		return nil, err
	}
	r, err := upstreamcore.NewClusterTrainingRuntime(ctx, c, upstreamtesting.AsIndex(builder), nil)
	if err != nil {
		return nil, err
	}
	if _, errs := r.ValidateObjects(ctx, nil, job); len(errs) > 0 {
		return nil, fmt.Errorf("refused: %w", errs.ToAggregate())
	}
	objs, err := r.NewObjects(ctx, job)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, o := range objs {
		m, err := toMap(o)
		if err != nil {
			return nil, err
		}
		out[objectKey(m)] = m
	}
	return out, nil
}

// buildGantry renders the input with Gantry's runtime.
func buildGantry(ctx context.Context, crds crdSchemas, in input) (map[string]map[string]any, error) {
	rt := &gantry.ClusterTrainingRuntime{}
	if err := decodeStored(crds, in.runtime.doc, rt); err != nil {
		return nil, fmt.Errorf("decoding the runtime as Gantry's type: %w", err)
	}
	job := &gantry.TrainJob{}
	if err := decodeStored(crds, trainJobDoc(in), job); err != nil {
		return nil, fmt.Errorf("decoding the TrainJob as Gantry's type: %w", err)
	}
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{clientgoscheme.AddToScheme, gantry.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(coscheduling.PodGroupGVK, meta.RESTScopeNamespace)
	mapper.Add(volcano.PodGroupGVK, meta.RESTScopeNamespace)
	r, err := gantryruntime.New(gantryruntime.Options{Existing: fake.NewClientBuilder().WithScheme(scheme).Build(), RESTMapper: mapper})
	if err != nil {
		return nil, err
	}
	if errs := gantryruntime.ValidateTrainJob(job); len(errs) > 0 {
		return nil, fmt.Errorf("refused: %w", errs.ToAggregate())
	}
	if errs := r.Validate(nil, job, &rt.Spec); len(errs) > 0 {
		return nil, fmt.Errorf("refused: %w", errs.ToAggregate())
	}
	res, err := r.NewObjects(ctx, job, &rt.Spec)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, c := range res.Components {
		m, err := toMap(c.Object)
		if err != nil {
			return nil, err
		}
		if m["kind"] == nil {
			gvks, _, err := scheme.ObjectKinds(c.Object)
			if err != nil {
				return nil, err
			}
			m["apiVersion"], m["kind"] = gvks[0].GroupVersion().String(), gvks[0].Kind
		}
		out[objectKey(m)] = m
	}
	return out, nil
}

func toMap(o any) (map[string]any, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

func objectKey(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	return fmt.Sprintf("%v/%v", m["kind"], md["name"])
}

// TestRenderingMatchesTrainer is the differential test.
func TestRenderingMatchesTrainer(t *testing.T) {
	ctx := context.Background()
	inputs := corpus(t)
	crds := loadSchemas(t)
	t.Logf("%d inputs", len(inputs))
	var compared, refusedBoth, gantryOnly, fluxCompared int
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			want, upErr := buildUpstream(ctx, crds["trainer"], in)
			got, gErr := buildGantry(ctx, crds["gantry"], in)
			switch {
			case upErr != nil && gErr != nil:
				refusedBoth++
				t.Logf("both refuse: Trainer: %v; Gantry: %v", upErr, gErr)
				return
			case upErr != nil:
				if reason, ok := deliberateGantryBuild(in, upErr, got); ok {
					gantryOnly++
					t.Logf("Trainer refuses (%v), Gantry builds: deliberate, %s", upErr, reason)
					return
				}
				t.Fatalf("Trainer refuses, Gantry builds: %v", upErr)
			case gErr != nil:
				t.Fatalf("Gantry refuses, Trainer builds: %v", gErr)
			}
			compared++
			if path(in.runtime.doc, "spec", "mlPolicy", "flux") != nil {
				fluxCompared++
			}
			normalize(in, want, got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Gantry's objects differ from Trainer v2.3.0's (-trainer +gantry):\n%s", diff)
			}
		})
	}
	t.Logf("%d inputs compared object for object (%d of them Flux), %d refused by both, %d built by Gantry only (deliberate)",
		compared, fluxCompared, refusedBoth, gantryOnly)
	if compared < 100 {
		t.Errorf("only %d inputs were compared; the oracle needs at least 100", compared)
	}
}
