package trainjob

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
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

// TestSnapshotTooBigForTheJobSetGoesToAConfigMap: a snapshot that would
// take the JobSet's annotations past maxSnapshotAnnotations (the runtime
// alone, or with what else the JobSet carries) is left off the JobSet and
// asked for as the job's <job>-runtime-snapshot ConfigMap, in Trainer
// v2.3's format: Trainer's decoding (sigs.k8s.io/yaml into the runtime's
// type, then its kind and name checked against runtimeRef) and Gantry's
// read it back as the spec. One already read from that ConfigMap is not
// asked for again.
func TestSnapshotTooBigForTheJobSetGoesToAConfigMap(t *testing.T) {
	scheme := snapshotTestScheme(t)
	cases := []struct {
		name      string
		spec      *trainer.TrainingRuntimeSpec
		jobSet    map[string]string
		kind      string
		wantInMap bool
	}{
		{name: "ordinary runtime", spec: bigRuntimeSpec("torch:runtime", 1<<10), kind: trainer.ClusterTrainingRuntimeKind},
		{name: "runtime past the limit", spec: bigRuntimeSpec("torch:runtime", 300<<10), kind: trainer.ClusterTrainingRuntimeKind, wantInMap: true},
		{name: "namespaced runtime past the limit", spec: bigRuntimeSpec("torch:runtime", 300<<10), kind: trainer.TrainingRuntimeKind, wantInMap: true},
		{name: "runtime just under the limit", spec: bigRuntimeSpec("torch:runtime", 120<<10), kind: trainer.ClusterTrainingRuntimeKind},
		{name: "runtime under the limit, the JobSet's own annotations over it", spec: bigRuntimeSpec("torch:runtime", 60<<10),
			jobSet: map[string]string{"example.com/notes": strings.Repeat("x", 80<<10)}, kind: trainer.ClusterTrainingRuntimeKind, wantInMap: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := trainertesting.MakeTrainJob("tj", "ns").RuntimeRef(tc.kind, "runtime").Obj()
			s := &scope{spec: tc.spec}
			s.Object = tj
			js := &jobsetv1alpha2.JobSet{}
			js.Annotations = maps.Clone(tc.jobSet)
			if err := s.stampRuntimeSnapshot(js); err != nil {
				t.Fatal(err)
			}
			if size := annotationsSize(js.Annotations); size > maxSnapshotAnnotations && !tc.wantInMap {
				t.Errorf("the JobSet's annotations come to %d bytes", size)
			}
			_, onJobSet := js.Annotations[RuntimeSnapshotAnnotation]
			if onJobSet == tc.wantInMap || (s.snapshotConfigMap != nil) != tc.wantInMap {
				t.Fatalf("snapshot on the JobSet: %v, ConfigMap: %v; want the ConfigMap: %v", onJobSet, s.snapshotConfigMap != nil, tc.wantInMap)
			}
			if !tc.wantInMap {
				return
			}
			cm := s.snapshotConfigMap
			if cm.Name != "tj-runtime-snapshot" || cm.Namespace != "ns" || cm.Labels[builder.LabelManagedBy] != builder.ManagedByGantry {
				t.Errorf("ConfigMap %s/%s labelled %v", cm.Namespace, cm.Name, cm.Labels)
			}
			if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != tj.UID || owner.Kind != trainer.TrainJobKind || !ptr.Deref(owner.BlockOwnerDeletion, false) {
				t.Errorf("controller %+v, want the TrainJob", owner)
			}

			// As Trainer v2.3's getRuntimeSnapshot reads it.
			var asTrainer client.Object = &trainer.ClusterTrainingRuntime{}
			if tc.kind == trainer.TrainingRuntimeKind {
				asTrainer = &trainer.TrainingRuntime{}
			}
			if err := yaml.Unmarshal([]byte(cm.Data["runtime"]), asTrainer); err != nil {
				t.Fatal(err)
			}
			gvk := asTrainer.GetObjectKind().GroupVersionKind()
			if gvk.Kind != tc.kind || gvk.Group != trainer.GroupVersion.Group || asTrainer.GetName() != "runtime" {
				t.Errorf("Trainer reads %v %q, want %s %q", gvk, asTrainer.GetName(), tc.kind, "runtime")
			}

			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm).Build()
			spec, err := readTrainerSnapshot(context.Background(), c, tj)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(*spec, *tc.spec) {
				t.Errorf("the snapshot reads back otherwise:\n%s", diff.Diff(*tc.spec, *spec))
			}

			// Built again from that ConfigMap: nothing more to write.
			again := &scope{spec: spec, snapshotInConfigMap: true}
			again.Object = tj
			js = &jobsetv1alpha2.JobSet{}
			js.Annotations = maps.Clone(tc.jobSet)
			if err := again.stampRuntimeSnapshot(js); err != nil {
				t.Fatal(err)
			}
			if _, ok := js.Annotations[RuntimeSnapshotAnnotation]; ok || again.snapshotConfigMap != nil {
				t.Errorf("rebuilt from its ConfigMap: annotation %v, ConfigMap %v; want neither", ok, again.snapshotConfigMap != nil)
			}
		})
	}
}
