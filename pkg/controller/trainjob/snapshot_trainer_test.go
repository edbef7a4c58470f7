package trainjob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// trainerSnapshotConfigMap is the ConfigMap Trainer v2.3 keeps a job's
// runtime in: named after the job, controlled by it, and holding under
// "runtime" the whole runtime object as Trainer read it, as YAML (its
// metadata too, managedFields included).
func trainerSnapshotConfigMap(t *testing.T, tj *trainer.TrainJob, owner types.UID, rt client.Object) *corev1.ConfigMap {
	t.Helper()
	rt = rt.DeepCopyObject().(client.Object)
	rt.SetUID("runtime-uid")
	rt.SetResourceVersion("4711")
	rt.SetGeneration(3)
	rt.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: trainer.GroupVersion.String()}})
	data, err := yaml.Marshal(rt)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: tj.Name + "-runtime-snapshot", Namespace: tj.Namespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: tj.Name, UID: owner,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Data: map[string]string{"runtime": string(data)},
	}
}

func torchRuntimeWithImage(image string) *trainer.TrainingRuntimeSpec {
	return trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob(image)).Obj()
}

func trainerImage(spec *trainer.TrainingRuntimeSpec) string {
	if spec == nil || len(spec.Template.Spec.ReplicatedJobs) == 0 {
		return ""
	}
	return spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image
}

func snapshotTestScheme(t *testing.T) *apiruntime.Scheme {
	t.Helper()
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// TestTrainerSnapshotTakesPrecedenceOverTheLiveRuntime: a job Trainer
// reconciled (migrated to Gantry, or created under Trainer before the
// switch) is built from the runtime kept in Trainer's
// <job>-runtime-snapshot ConfigMap, not from the runtime as it is now,
// whether or not the runtime still exists. Gantry's own annotation on the
// JobSet, the snapshot the JobSet was last built from, ranks first.
func TestTrainerSnapshotTakesPrecedenceOverTheLiveRuntime(t *testing.T) {
	scheme := snapshotTestScheme(t)
	created := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	tjWrapper := trainertesting.MakeTrainJob("tj", "ns")
	tjWrapper.CreationTimestamp = created
	tj := tjWrapper.Obj()
	live := trainertesting.MakeClusterTrainingRuntime("runtime").Spec(torchRuntimeWithImage("torch:live")).Obj()
	atTrainer := trainertesting.MakeClusterTrainingRuntime("runtime").Spec(torchRuntimeWithImage("torch:trainer")).Obj()
	ownSnapshot := trainerSnapshotConfigMap(t, tj, tj.UID, atTrainer)

	trainerJobSet := func() *jobsetv1alpha2.JobSet {
		return &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(tj, trainer.GroupVersion.WithKind(trainer.TrainJobKind))}},
			Spec: jobsetv1alpha2.JobSetSpec{Suspend: ptr.To(true)}}
	}
	gantryJobSet := func(image string) *jobsetv1alpha2.JobSet {
		js := trainerJobSet()
		snap := runtimeSnapshot{Spec: *torchRuntimeWithImage(image)}
		snap.APIVersion, snap.Kind = trainer.GroupVersion.String(), trainer.ClusterTrainingRuntimeKind
		snap.Metadata.Name = "runtime"
		data, err := marshalSnapshot(&snap)
		if err != nil {
			t.Fatal(err)
		}
		js.Annotations = map[string]string{RuntimeSnapshotAnnotation: string(data)}
		return js
	}
	withData := func(cm *corev1.ConfigMap, key, value string) *corev1.ConfigMap {
		cm = cm.DeepCopy()
		cm.Data = map[string]string{key: value}
		return cm
	}
	otherRuntime := trainertesting.MakeClusterTrainingRuntime("other").Spec(torchRuntimeWithImage("torch:other")).Obj()
	otherTraining := trainertesting.MakeTrainingRuntime("runtime", "ns").Spec(torchRuntimeWithImage("torch:other")).Obj()

	cases := []struct {
		name      string
		objs      []client.Object
		jobSet    *jobsetv1alpha2.JobSet
		wantImage string
		wantErr   string
	}{
		{name: "Trainer's snapshot, no JobSet", objs: []client.Object{live, ownSnapshot}, wantImage: "torch:trainer"},
		{name: "Trainer's snapshot and Trainer's suspended JobSet", objs: []client.Object{live, ownSnapshot}, jobSet: trainerJobSet(), wantImage: "torch:trainer"},
		{name: "Trainer's snapshot, the runtime deleted since", objs: []client.Object{ownSnapshot}, jobSet: trainerJobSet(), wantImage: "torch:trainer"},
		{name: "no snapshot at all", objs: []client.Object{live}, jobSet: trainerJobSet(), wantImage: "torch:live"},
		{name: "Gantry's annotation ranks before Trainer's snapshot", objs: []client.Object{live, ownSnapshot}, jobSet: gantryJobSet("torch:gantry"), wantImage: "torch:gantry"},
		{name: "a ConfigMap of that name another object controls is not the job's snapshot",
			objs: []client.Object{live, trainerSnapshotConfigMap(t, tj, "someone-else", atTrainer)}, jobSet: trainerJobSet(), wantImage: "torch:live"},
		{name: "a snapshot of another runtime", objs: []client.Object{live, trainerSnapshotConfigMap(t, tj, tj.UID, otherRuntime)},
			jobSet: trainerJobSet(), wantErr: "other"},
		{name: "a snapshot of another kind", objs: []client.Object{live, trainerSnapshotConfigMap(t, tj, tj.UID, otherTraining)},
			jobSet: trainerJobSet(), wantErr: trainer.TrainingRuntimeKind},
		{name: "a snapshot without its key", objs: []client.Object{live, withData(ownSnapshot, "other", "x")},
			jobSet: trainerJobSet(), wantErr: `"runtime"`},
		{name: "a snapshot that is not YAML", objs: []client.Object{live, withData(ownSnapshot, "runtime", "{")},
			jobSet: trainerJobSet(), wantErr: "snapshot"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			// The job predates the manager: Trainer may have reconciled it.
			r := &Reconciler{client: c, apiReader: c, started: created.Add(time.Hour)}
			s := &scope{jobSet: tc.jobSet}
			s.Object = tj.DeepCopy()
			err := r.resolveRuntime(context.Background(), s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("resolveRuntime() = %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := trainerImage(s.spec); got != tc.wantImage {
				t.Errorf("built from the runtime with image %q, want %q", got, tc.wantImage)
			}
		})
	}
}

// TestSnapshotIsTakenWhenTheJobIsCreated: the JobSet write that creates a
// job carries the runtime snapshot whether the job runs at once or is
// created suspended (queued by Kueue), as Trainer snapshots the runtime at
// the job's first build; the snapshot a JobSet carries is kept as it is.
func TestSnapshotIsTakenWhenTheJobIsCreated(t *testing.T) {
	for _, suspended := range []bool{false, true} {
		s := &scope{spec: torchRuntimeWithImage("torch:runtime")}
		s.Object = trainertesting.MakeTrainJob("tj", "ns").Suspend(suspended).Obj()
		js := &jobsetv1alpha2.JobSet{}
		if err := s.stampRuntimeSnapshot(js); err != nil {
			t.Fatal(err)
		}
		got, err := readRuntimeSnapshot(js)
		if err != nil {
			t.Fatal(err)
		}
		if trainerImage(got) != "torch:runtime" {
			t.Errorf("suspended=%v: the new JobSet carries the snapshot %v, want the runtime's", suspended, got)
		}

		// Resuming later keeps what the JobSet carries, not the runtime now.
		s.jobSet = js.DeepCopy()
		s.spec = torchRuntimeWithImage("torch:edited")
		again := &jobsetv1alpha2.JobSet{}
		if err := s.stampRuntimeSnapshot(again); err != nil {
			t.Fatal(err)
		}
		if again.Annotations[RuntimeSnapshotAnnotation] != js.Annotations[RuntimeSnapshotAnnotation] {
			t.Errorf("suspended=%v: the snapshot changed on a later write", suspended)
		}
	}
}

// countingReader counts the ConfigMaps read through it.
type countingReader struct {
	client.Reader
	configMaps atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.ConfigMap); ok {
		r.configMaps.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestNewJobLooksForNoTrainerSnapshot: a job created after the manager
// started, with no JobSet yet, was reconciled by no Trainer, so its first
// build reads nothing past the cache; a job that predates the manager
// (within the clock skew allowed), or has a JobSet without Gantry's
// snapshot, is looked up.
func TestNewJobLooksForNoTrainerSnapshot(t *testing.T) {
	scheme := snapshotTestScheme(t)
	started := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	live := trainertesting.MakeClusterTrainingRuntime("runtime").Spec(torchRuntimeWithImage("torch:live")).Obj()
	cases := []struct {
		name     string
		created  time.Time
		jobSet   bool
		wantRead bool
	}{
		{name: "created after the start, no JobSet", created: started.Add(2 * trainerSnapshotSkew)},
		{name: "created after the start, within the skew", created: started.Add(trainerSnapshotSkew / 2), wantRead: true},
		{name: "created before the start, no JobSet", created: started.Add(-time.Hour), wantRead: true},
		{name: "created after the start, a JobSet without snapshot", created: started.Add(time.Hour), jobSet: true, wantRead: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := trainertesting.MakeTrainJob("tj", "ns")
			w.CreationTimestamp = metav1.NewTime(tc.created)
			tj := w.Obj()
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).Build()
			reader := &countingReader{Reader: c}
			r := &Reconciler{client: c, apiReader: reader, started: started}
			s := &scope{}
			s.Object = tj
			if tc.jobSet {
				s.jobSet = &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace}}
			}
			if err := r.resolveRuntime(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if got := reader.configMaps.Load() > 0; got != tc.wantRead {
				t.Errorf("read a ConfigMap past the cache: %v, want %v", got, tc.wantRead)
			}
			if trainerImage(s.spec) != "torch:live" {
				t.Errorf("built from %q, want the live runtime", trainerImage(s.spec))
			}
		})
	}
}

// TestTrainerSnapshotOfEveryShippedRuntime: Trainer's snapshot of each
// shipped runtime, the whole object as YAML (metadata, managedFields and
// all), reads back as the runtime's spec, and the JobSet Gantry builds
// from it carries the same spec in its own snapshot.
func TestTrainerSnapshotOfEveryShippedRuntime(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "config", "runtimes", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("runtimes: %v, %v", files, err)
	}
	scheme := snapshotTestScheme(t)
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
			tj := trainertesting.MakeTrainJob("tj", "ns").RuntimeRef(trainer.ClusterTrainingRuntimeKind, ctr.Name).Obj()
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(trainerSnapshotConfigMap(t, tj, tj.UID, &ctr)).Build()
			spec, err := readTrainerSnapshot(context.Background(), c, tj)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(*spec, ctr.Spec) {
				t.Fatalf("Trainer's snapshot reads back otherwise:\n%s", diff.Diff(ctr.Spec, *spec))
			}
			s := &scope{spec: spec}
			s.Object = tj
			js := &jobsetv1alpha2.JobSet{}
			if err := s.stampRuntimeSnapshot(js); err != nil {
				t.Fatal(err)
			}
			own, err := readRuntimeSnapshot(js)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(*own, ctr.Spec) {
				t.Errorf("the JobSet's snapshot differs from Trainer's:\n%s", diff.Diff(ctr.Spec, *own))
			}
		})
	}
}
