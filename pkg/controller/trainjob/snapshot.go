package trainjob

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/apply"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// A job is built from the runtime it was created with, not from the
// runtime as it is at each build, as in Trainer v2.3. The snapshot is
// looked for in this order:
//
//  1. RuntimeSnapshotAnnotation on the job's JobSet: the snapshot that
//     JobSet was built from. Gantry writes it with every JobSet it builds,
//     and Trainer's own apply of a rebuilt JobSet (same field manager,
//     "trainer") removes it, so while it is there it describes the JobSet
//     as it is. It needs no read.
//  2. Trainer's ConfigMap <job>-runtime-snapshot, controlled by the job:
//     a job Trainer reconciled before the switch to Gantry. Read past the
//     cache (the cache holds only ConfigMaps Gantry labels), and only for
//     jobs that may have one (trainerMayHaveSnapshot), so that a new job
//     costs no read.
//  3. The live runtime.
//
// Whichever it was, the JobSet Gantry writes carries it from then on
// (stampRuntimeSnapshot), from the job's first build on, suspended or not:
// the annotation rides on the JobSet write every job needs, where a
// ConfigMap would be one more write per job.
//
// Except for a runtime too big for it: the annotations of one object may
// hold 256 KiB in all, and the API server refuses a JobSet past that, so
// the job would never start. A snapshot that would take the JobSet's
// annotations past maxSnapshotAnnotations goes instead, before the JobSet,
// into the ConfigMap <job>-runtime-snapshot that the job controls, in
// Trainer v2.3's format (Trainer reads it after a switch back), labelled
// as Gantry's so that the manager's cache holds it: (2) then finds it
// without a read past the cache, since such a JobSet carries no
// annotation. Only jobs of such runtimes pay that write. The snapshot is
// taken when the ConfigMap is first written, even if the JobSet write
// after it fails.

// RuntimeSnapshotAnnotation on a TrainJob's JobSet holds the runtime the
// job was created with: its kind, name and spec as JSON. It rides on the
// JobSet write that creates the job (running or suspended), so it costs no
// request of its own, and it goes with the JobSet.
const RuntimeSnapshotAnnotation = "gantry.dev/runtime-snapshot"

// Trainer v2.3's snapshot: a ConfigMap named after the job with this
// suffix, controlled by the job, holding under TrainerSnapshotKey the
// runtime object (apiVersion, kind, metadata, spec) as YAML.
const (
	TrainerSnapshotSuffix = "-runtime-snapshot"
	TrainerSnapshotKey    = "runtime"
)

// maxSnapshotAnnotations is the most the annotations of a JobSet may come
// to with the runtime snapshot among them: half the API server's 256 KiB
// for all of an object's annotations (keys and values), which leaves the
// other half to the applied-hash annotation and to whatever anyone else
// adds later. A snapshot past it goes to a ConfigMap. Runtimes are
// commonly a few KiB; the shipped ones are all under 8 KiB.
const maxSnapshotAnnotations = 128 << 10

// trainerSnapshotSkew is how long after this manager started a TrainJob
// without a JobSet still counts as one that may predate it (and so may
// have been reconciled by Trainer): it covers the clock difference between
// the API server, which stamps creationTimestamp, and this process.
const trainerSnapshotSkew = time.Minute

// runtimeSnapshot is the annotation's value.
type runtimeSnapshot struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	} `json:"metadata"`
	Spec trainer.TrainingRuntimeSpec `json:"spec"`
}

// readRuntimeSnapshot returns the runtime spec the JobSet was built from,
// or nil when it carries none (a JobSet Trainer, or a Gantry without
// snapshots, built).
func readRuntimeSnapshot(jobSet *jobsetv1alpha2.JobSet) (*trainer.TrainingRuntimeSpec, error) {
	if jobSet == nil {
		return nil, nil
	}
	raw, ok := jobSet.Annotations[RuntimeSnapshotAnnotation]
	if !ok {
		return nil, nil
	}
	// The API machinery's decoder, which has already met these types in
	// the runtimes and JobSets the manager watches; encoding/json would
	// build its own cache of every type of a runtime on first use.
	var snap runtimeSnapshot
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(raw), &snap); err != nil {
		return nil, fmt.Errorf("decoding the runtime snapshot of JobSet %s (annotation %s): %w", jobSet.Name, RuntimeSnapshotAnnotation, err)
	}
	return &snap.Spec, nil
}

// stampRuntimeSnapshot puts the snapshot on the JobSet about to be written:
// the one it already carries, or else the runtime spec the JobSet was built
// from (Trainer's snapshot, or the live runtime). That is at the job's first
// build, whether it runs at once or is created suspended (queued by Kueue),
// which is when Trainer snapshots it. From then on the job is built from the
// snapshot, not the live runtime: a job waiting in a queue, or suspended (by
// a user, or by Kueue's preemption) and resumed, runs as it was created,
// whatever was changed in the runtime meanwhile.
//
// A snapshot that does not fit (maxSnapshotAnnotations) is left off the
// JobSet: it stays in the ConfigMap it was read from, or, taken from the
// live runtime, becomes s.snapshotConfigMap, for apply to write before the
// JobSet.
func (s *scope) stampRuntimeSnapshot(js *jobsetv1alpha2.JobSet) error {
	trainJob := s.Object
	value, carried := "", false
	if s.jobSet != nil {
		value, carried = s.jobSet.Annotations[RuntimeSnapshotAnnotation]
	}
	if !carried {
		if s.spec == nil {
			return nil
		}
		snap := newRuntimeSnapshot(trainJob, s.spec)
		data, err := marshalSnapshot(snap)
		if err != nil {
			return err
		}
		if annotationsSize(js.Annotations)+len(RuntimeSnapshotAnnotation)+len(data) > maxSnapshotAnnotations {
			if s.snapshotInConfigMap {
				return nil
			}
			cm, err := snapshotConfigMap(trainJob, data)
			if err != nil {
				return err
			}
			s.snapshotConfigMap = cm
			return nil
		}
		value = string(data)
	}
	if js.Annotations == nil {
		js.Annotations = map[string]string{}
	}
	js.Annotations[RuntimeSnapshotAnnotation] = value
	return nil
}

// newRuntimeSnapshot is the snapshot of spec, the runtime trainJob
// references.
func newRuntimeSnapshot(trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) *runtimeSnapshot {
	ref := trainJob.Spec.RuntimeRef
	snap := &runtimeSnapshot{Spec: *spec}
	snap.APIVersion = trainer.GroupVersion.String()
	snap.Kind = ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)
	snap.Metadata.Name = ref.Name
	if snap.Kind == trainer.TrainingRuntimeKind {
		snap.Metadata.Namespace = trainJob.Namespace
	}
	return snap
}

// annotationsSize is what annotations count against the API server's
// limit: the length of every key and value.
func annotationsSize(annotations map[string]string) int {
	n := 0
	for k, v := range annotations {
		n += len(k) + len(v)
	}
	return n
}

// SnapshotConfigMap is the ConfigMap in which Gantry keeps the snapshot of
// spec, the runtime trainJob references, when it is too big for the
// JobSet (snapshotConfigMap).
func SnapshotConfigMap(trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) (*corev1.ConfigMap, error) {
	data, err := marshalSnapshot(newRuntimeSnapshot(trainJob, spec))
	if err != nil {
		return nil, err
	}
	return snapshotConfigMap(trainJob, data)
}

// snapshotConfigMap is the ConfigMap that keeps a snapshot too big for the
// JobSet: Trainer v2.3's, the runtime object (apiVersion, kind, name and
// spec) as YAML under TrainerSnapshotKey, in <job>-runtime-snapshot,
// controlled by the job (deleted with it), plus Gantry's managed-by label,
// which puts it in the manager's cache. data is the snapshot as JSON.
func snapshotConfigMap(trainJob *trainer.TrainJob, data []byte) (*corev1.ConfigMap, error) {
	runtimeYAML, err := yaml.JSONToYAML(data)
	if err != nil {
		return nil, fmt.Errorf("encoding the runtime snapshot as YAML: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: plugin.OwnedObjectMeta(trainJob.Name+TrainerSnapshotSuffix, trainJob, nil),
		Data:       map[string]string{TrainerSnapshotKey: string(runtimeYAML)},
	}, nil
}

// writeSnapshotConfigMap writes the snapshot ConfigMap the build asked for
// (stampRuntimeSnapshot), before the JobSet. The first build of a job
// creates it: one request, no read. One the build did not find (a
// ConfigMap of that name not in the cache yet, or not Gantry's) is read
// past the cache: the job's own is brought to the snapshot just taken (it
// was written an instant ago, by the build before, from the same runtime
// unless that changed meanwhile), and anyone else's is refused, as Trainer
// refuses a snapshot ConfigMap another object controls: taking over a
// user's ConfigMap would have it garbage-collected with the job.
func (r *Reconciler) writeSnapshotConfigMap(ctx context.Context, cm *corev1.ConfigMap) error {
	key := client.ObjectKeyFromObject(cm)
	live := &corev1.ConfigMap{}
	err := r.client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		created, cerr := r.applier.Create(ctx, cm)
		if cerr != nil || created {
			return cerr
		}
		var reader client.Reader = r.client
		if r.apiReader != nil {
			reader = r.apiReader
		}
		err = reader.Get(ctx, key, live)
	}
	if err != nil {
		return fmt.Errorf("reading the runtime snapshot ConfigMap %s: %w", key.Name, err)
	}
	res, _, err := r.applier.EnsureOwnFrom(ctx, cm, live)
	if err != nil {
		return fmt.Errorf("writing the runtime snapshot ConfigMap %s: %w", key.Name, err)
	}
	if res == apply.Foreign {
		return fmt.Errorf("the runtime snapshot does not fit on the JobSet, and ConfigMap %s, where it goes instead, belongs to another object: delete or rename it", key.Name)
	}
	return nil
}

// marshalSnapshot is snap as JSON, through the unstructured converter and
// a plain map: the converter's cache of a runtime's types, built at the
// first job, held 70 KB in a heap profile, where encoding/json's per-type
// encoders held 150 KB (docs/benchmarks.md). The keys come out sorted,
// not in the types' order; JSON readers do not mind.
func marshalSnapshot(snap *runtimeSnapshot) ([]byte, error) {
	content, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(snap)
	if err != nil {
		return nil, err
	}
	return json.Marshal(content)
}

// resolveSnapshot returns the runtime spec the job was created with (see
// the order at the top of this file), or nil when there is none and the
// live runtime is to be used.
//
// The ConfigMap is looked for in the cache first, for every job (it costs
// no request): the cache holds Gantry's own, the snapshot of a runtime too
// big for the JobSet, which is taken when first written, as Trainer takes
// its snapshot, even if the JobSet write after it failed. Trainer's, which
// the cache does not hold, is then read past the cache for the jobs that
// may have one.
func (r *Reconciler) resolveSnapshot(ctx context.Context, s *scope) (*trainer.TrainingRuntimeSpec, error) {
	if spec, err := readRuntimeSnapshot(s.jobSet); err != nil || spec != nil {
		return spec, err
	}
	spec, err := readTrainerSnapshot(ctx, r.client, s.Object)
	if err == nil && spec == nil && r.apiReader != nil && r.trainerMayHaveSnapshot(s) {
		spec, err = readTrainerSnapshot(ctx, r.apiReader, s.Object)
	}
	s.snapshotInConfigMap = spec != nil
	return spec, err
}

// trainerMayHaveSnapshot says whether the job may have Trainer's snapshot
// ConfigMap: it has a JobSet that carries no Gantry snapshot (built by
// Trainer, or by a Gantry before this one), or no JobSet and was created
// before this manager started. A job created since, with no JobSet yet,
// is new: only this manager has reconciled it, and looking would cost a
// read past the cache for every new job. (A Reconciler built without New
// has no start time and looks only where there is a JobSet.)
func (r *Reconciler) trainerMayHaveSnapshot(s *scope) bool {
	if s.jobSet != nil {
		return true
	}
	return !r.started.IsZero() && s.Object.CreationTimestamp.Time.Before(r.started.Add(trainerSnapshotSkew))
}

// trainerSnapshot is what this package reads of the runtime object in
// Trainer's snapshot ConfigMap; the rest of its metadata (uid,
// resourceVersion, managedFields, ...) is ignored.
type trainerSnapshot struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec trainer.TrainingRuntimeSpec `json:"spec"`
}

// readTrainerSnapshot reads Trainer v2.3's snapshot of trainJob's runtime,
// or nil when there is none. A ConfigMap of that name that the job does not
// control is not its snapshot and is ignored (Trainer refuses to build such
// a job at all). A snapshot the job controls but that cannot be read, or
// that names a runtime other than the job's runtimeRef, is an error, as in
// Trainer: the build is retried, and deleting the ConfigMap lets the job be
// built from the live runtime.
func readTrainerSnapshot(ctx context.Context, reader client.Reader, trainJob *trainer.TrainJob) (*trainer.TrainingRuntimeSpec, error) {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: trainJob.Namespace, Name: trainJob.Name + TrainerSnapshotSuffix}
	if err := reader.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the runtime snapshot ConfigMap %s: %w", key.Name, err)
	}
	if owner := metav1.GetControllerOfNoCopy(cm); owner == nil || owner.UID != trainJob.UID {
		ctrl.LoggerFrom(ctx).V(1).Info("ignoring a ConfigMap the TrainJob does not control", "configMap", key.Name)
		return nil, nil
	}
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("invalid runtime snapshot in ConfigMap %s (delete it to build from the runtime as it is now): %s", key.Name, fmt.Sprintf(format, args...))
	}
	raw, ok := cm.Data[TrainerSnapshotKey]
	if !ok {
		return nil, invalid("no %q key", TrainerSnapshotKey)
	}
	data, err := yaml.YAMLToJSON([]byte(raw))
	if err != nil {
		return nil, invalid("%v", err)
	}
	var snap trainerSnapshot
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &snap); err != nil {
		return nil, invalid("%v", err)
	}
	ref := trainJob.Spec.RuntimeRef
	gvk := snap.GroupVersionKind()
	if snap.Metadata.Name != ref.Name ||
		(ref.Kind != nil && gvk.Kind != *ref.Kind) ||
		(ref.APIGroup != nil && gvk.Group != *ref.APIGroup) {
		return nil, invalid("it holds %s %q of group %q, the TrainJob names %s %q of group %q",
			gvk.Kind, snap.Metadata.Name, gvk.Group,
			ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind), ref.Name, ptr.Deref(ref.APIGroup, trainer.GroupVersion.Group))
	}
	return &snap.Spec, nil
}
