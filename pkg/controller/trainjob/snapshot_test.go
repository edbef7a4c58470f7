package trainjob

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// TestRuntimeSnapshotRoundTrip: for every shipped runtime, the snapshot
// reads back as the spec it was made from, and says what encoding/json
// would (the keys aside).
func TestRuntimeSnapshotRoundTrip(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "config", "runtimes")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("runtimes in %s: %v, %v", dir, files, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "kustomization.yaml") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var ctr trainer.ClusterTrainingRuntime
			if err := yaml.UnmarshalStrict(data, &ctr); err != nil {
				t.Fatal(err)
			}
			snap := runtimeSnapshot{Spec: ctr.Spec}
			snap.APIVersion, snap.Kind = trainer.GroupVersion.String(), trainer.ClusterTrainingRuntimeKind
			snap.Metadata.Name = ctr.Name

			got, err := marshalSnapshot(&snap)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(snap)
			if err != nil {
				t.Fatal(err)
			}
			var gotContent, wantContent map[string]any
			if err := json.Unmarshal(got, &gotContent); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &wantContent); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(gotContent, wantContent) {
				t.Errorf("snapshot differs from encoding/json's:\n%s", diff.Diff(wantContent, gotContent))
			}

			js := &jobsetv1alpha2.JobSet{}
			js.Annotations = map[string]string{RuntimeSnapshotAnnotation: string(got)}
			spec, err := readRuntimeSnapshot(js)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(*spec, ctr.Spec) {
				t.Errorf("the snapshot reads back otherwise:\n%s", diff.Diff(ctr.Spec, *spec))
			}
		})
	}
}
