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
	for _, file := range append(seeds, invalid...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		tj := &trainer.TrainJob{}
		if err := yaml.Unmarshal(data, tj); err != nil {
			continue
		}
		spec, err := yaml.Marshal(tj.Spec)
		if err != nil {
			f.Fatal(err)
		}
		for i := range specs {
			f.Add(spec, uint8(i))
		}
	}
	f.Add([]byte(`{"trainer":{"numNodes":0,"numProcPerNode":"auto","resourcesPerNode":{"limits":{"nvidia.com/gpu":"8"}}}}`), uint8(0))
	f.Add([]byte(`{"runtimePatches":[{"manager":"x.io/m","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{"containers":[{"name":"node","env":[{"name":"A","value":"b"}]}]}}}}}]}}}}]}`), uint8(1))
	rt := newRuntime(f)
	f.Fuzz(func(t *testing.T, specJSON []byte, which uint8) {
		job := &trainer.TrainJob{}
		job.Name, job.Namespace, job.UID = "fuzz", "default", "uid-fuzz"
		if err := yaml.Unmarshal(specJSON, &job.Spec); err != nil {
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

func jobSetIn(res *Result) *jobsetv1alpha2.JobSet {
	for _, c := range res.Components {
		if js, ok := c.Object.(*jobsetv1alpha2.JobSet); ok {
			return js
		}
	}
	return nil
}
