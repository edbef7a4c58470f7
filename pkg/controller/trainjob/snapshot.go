package trainjob

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	sigsjson "sigs.k8s.io/json"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// RuntimeSnapshotAnnotation on a TrainJob's JobSet holds the runtime the
// job started with: its kind, name and spec as JSON. It rides on the JobSet
// write that starts the job, so it costs no request of its own, and it goes
// with the JobSet.
const RuntimeSnapshotAnnotation = "gantry.dev/runtime-snapshot"

// runtimeSnapshot is the annotation's value.
type runtimeSnapshot struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	} `json:"metadata"`
	Spec trainer.TrainingRuntimeSpec `json:"spec"`
}

// readRuntimeSnapshot returns the runtime spec the job started with, from
// its JobSet, or nil when the job has not run yet (or started under a
// Gantry without snapshots).
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
// the one it already carries, or, when this write runs the job (creates it
// unsuspended, or resumes it), the runtime spec the JobSet was built from.
// From then on the job is built from the snapshot, not the live runtime: a
// job suspended (by a user, or by Kueue's preemption) and resumed comes back
// as it started, whatever was changed in the runtime meanwhile. A job that
// has never run takes the runtime as it is when it first runs.
func (s *scope) stampRuntimeSnapshot(js *jobsetv1alpha2.JobSet) error {
	trainJob := s.Object
	value, carried := "", false
	if s.jobSet != nil {
		value, carried = s.jobSet.Annotations[RuntimeSnapshotAnnotation]
	}
	if !carried {
		if ptr.Deref(trainJob.Spec.Suspend, false) || s.spec == nil {
			return nil
		}
		ref := trainJob.Spec.RuntimeRef
		snap := runtimeSnapshot{Spec: *s.spec}
		snap.APIVersion = trainer.GroupVersion.String()
		snap.Kind = ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)
		snap.Metadata.Name = ref.Name
		if snap.Kind == trainer.TrainingRuntimeKind {
			snap.Metadata.Namespace = trainJob.Namespace
		}
		data, err := marshalSnapshot(&snap)
		if err != nil {
			return err
		}
		value = string(data)
	}
	if js.Annotations == nil {
		js.Annotations = map[string]string{}
	}
	js.Annotations[RuntimeSnapshotAnnotation] = value
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
