package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
)

// FuzzNewObjects: any TrainJob spec, against each shipped runtime, is
// either refused or built (runtime patches merged, every plugin's Build
// run) without a panic, and building the same input twice renders the same
// JobSet: the plugin order is fixed.
func FuzzNewObjects(f *testing.F) {
	root := testenv.RepoRoot()
	runtimes, err := filepath.Glob(filepath.Join(root, "config", "runtimes", "*_distributed.yaml"))
	if err != nil || len(runtimes) == 0 {
		f.Fatalf("no shipped runtimes: %v", err)
	}
	var specs []*trainer.TrainingRuntimeSpec
	for _, file := range runtimes {
		ctr := &trainer.ClusterTrainingRuntime{}
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if err := yaml.Unmarshal(data, ctr); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		specs = append(specs, &ctr.Spec)
	}
	// Seeds: the TrainJob samples and the invalid TrainJobs of the
	// admission corpus, as JSON specs.
	seeds, _ := filepath.Glob(filepath.Join(root, "config", "samples", "trainer_v1alpha1_trainjob*.yaml"))
	invalid, _ := filepath.Glob(filepath.Join(root, "test", "testdata", "invalid", "trainjob-*.yaml"))
	type seed struct {
		from string
		spec []byte
		rt   uint8
	}
	var all []seed
	for _, file := range append(seeds, invalid...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		tj := &trainer.TrainJob{}
		if err := yaml.Unmarshal(data, tj); err != nil {
			f.Fatalf("%s does not decode as a TrainJob, so it would seed nothing: %v", file, err)
		}
		spec, err := yaml.Marshal(tj.Spec)
		if err != nil {
			f.Fatal(err)
		}
		for i := range specs {
			all = append(all, seed{file, spec, uint8(i)})
		}
	}
	all = append(all,
		// Counts that are refused (TrainJob's numProcPerNode is an integer;
		// "auto" is what torch derives when it is unset, next seed).
		seed{"inline", []byte(`{"trainer":{"numNodes":0,"numProcPerNode":0,"resourcesPerNode":{"limits":{"nvidia.com/gpu":"8"}}}}`), 0},
		seed{"inline", []byte(`{"trainer":{"numNodes":2,"resourcesPerNode":{"limits":{"nvidia.com/gpu":"8"}}}}`), 0},
		seed{"inline", []byte(`{"runtimePatches":[{"manager":"x.io/m","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{"containers":[{"name":"node","env":[{"name":"A","value":"b"}]}]}}}}}]}}}}]}`), 1},
	)
	// A seed the fuzz target cannot decode returns at once and tests
	// nothing; every seed must be a TrainJob spec.
	for _, s := range all {
		if err := decodeFuzzSpec(s.spec, &trainer.TrainJobSpec{}); err != nil {
			f.Fatalf("seed %s %s does not decode as a TrainJob spec: %v", s.from, s.spec, err)
		}
		f.Add(s.spec, s.rt)
	}
	rt := newRuntime(f)
	f.Fuzz(func(t *testing.T, specJSON []byte, which uint8) {
		job := &trainer.TrainJob{}
		job.Name, job.Namespace, job.UID = "fuzz", "default", "uid-fuzz"
		if err := decodeFuzzSpec(specJSON, &job.Spec); err != nil {
			return
		}
		job.Spec.RuntimeRef = trainer.RuntimeRef{Name: "rt", APIGroup: ptr.To(trainer.GroupVersion.Group), Kind: ptr.To(trainer.ClusterTrainingRuntimeKind)}
		spec := specs[int(which)%len(specs)].DeepCopy()
		_ = rt.Validate(nil, job, spec)
		first, err := rt.NewObjects(context.Background(), job.DeepCopy(), spec.DeepCopy())
		if err != nil {
			return
		}
		second, err := rt.NewObjects(context.Background(), job.DeepCopy(), spec.DeepCopy())
		if err != nil {
			t.Fatalf("the second build of the same input failed: %v", err)
		}
		if a, b := jobSetIn(first), jobSetIn(second); !equality.Semantic.DeepEqual(a, b) {
			t.Fatalf("two builds of the same input rendered different JobSets")
		}
	})
}

// decodeFuzzSpec is how the fuzz target reads its input, and how each seed
// is checked.
func decodeFuzzSpec(data []byte, spec *trainer.TrainJobSpec) error {
	return yaml.Unmarshal(data, spec)
}

func jobSetIn(res *Result) *jobsetv1alpha2.JobSet {
	for _, c := range res.Components {
		if js, ok := c.Object.(*jobsetv1alpha2.JobSet); ok {
			return js
		}
	}
	return nil
}
