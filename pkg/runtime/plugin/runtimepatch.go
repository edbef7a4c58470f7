package plugin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

var runtimePatchesPath = field.NewPath("spec", "runtimePatches")

// applyRuntimePatches merges the TrainJob's runtime patches onto spec, one
// manager's entry after another in list order, so a later entry wins where
// two touch the same field. The patch types share the JobSet's JSON shape,
// so each entry is a strategic merge patch of the JobSet spec: replicated
// jobs, containers, env and volumes merge by key; JobSet-level labels and
// annotations merge into labels and annotations.
func applyRuntimePatches(trainJob *trainer.TrainJob, spec *jobsetv1alpha2.JobSetSpec, labels, annotations map[string]string) error {
	// Strategic merge may reorder keyed lists; PodSets are matched to
	// replicated jobs by position, so the runtime's order is restored after.
	order := map[string]int{}
	for i, rJob := range spec.ReplicatedJobs {
		order[rJob.Name] = i
	}
	for i, rp := range trainJob.Spec.RuntimePatches {
		if rp.TrainingRuntimeSpec == nil || rp.TrainingRuntimeSpec.Template == nil {
			continue
		}
		tmpl := rp.TrainingRuntimeSpec.Template
		if tmpl.Metadata != nil {
			maps.Copy(labels, tmpl.Metadata.Labels)
			maps.Copy(annotations, tmpl.Metadata.Annotations)
		}
		if tmpl.Spec == nil {
			continue
		}
		original, err := json.Marshal(spec)
		if err != nil {
			return err
		}
		patch, err := json.Marshal(tmpl.Spec)
		if err != nil {
			return err
		}
		merged, err := strategicpatch.StrategicMergePatch(original, patch, jobsetv1alpha2.JobSetSpec{})
		if err != nil {
			return fmt.Errorf("runtime patch %d (manager %q): %w", i, rp.Manager, err)
		}
		var out jobsetv1alpha2.JobSetSpec
		if err := json.Unmarshal(merged, &out); err != nil {
			return fmt.Errorf("runtime patch %d (manager %q): %w", i, rp.Manager, err)
		}
		*spec = out
	}
	slices.SortStableFunc(spec.ReplicatedJobs, func(a, b jobsetv1alpha2.ReplicatedJob) int {
		return order[a.Name] - order[b.Name]
	})
	return nil
}

// ValidateRuntimePatches checks that every patch targets replicated jobs and
// containers the runtime has: a strategic merge would otherwise add a job or
// a container without an image. It also rejects env patches on the node and
// initializer containers, whose env comes from the Trainer and Initializer
// APIs (and is validated there against reserved names).
func ValidateRuntimePatches(trainJob *trainer.TrainJob, spec *jobsetv1alpha2.JobSetSpec) field.ErrorList {
	var errs field.ErrorList
	jobs := map[string]*jobsetv1alpha2.ReplicatedJob{}
	for i := range spec.ReplicatedJobs {
		jobs[spec.ReplicatedJobs[i].Name] = &spec.ReplicatedJobs[i]
	}
	for i, rp := range trainJob.Spec.RuntimePatches {
		if rp.TrainingRuntimeSpec == nil || rp.TrainingRuntimeSpec.Template == nil || rp.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		rjPath := runtimePatchesPath.Index(i).Child("trainingRuntimeSpec", "template", "spec", "replicatedJobs")
		for _, rjp := range rp.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			path := rjPath.Key(rjp.Name)
			rJob, ok := jobs[rjp.Name]
			if !ok {
				errs = append(errs, field.NotFound(path, rjp.Name))
				continue
			}
			if rjp.Template == nil || rjp.Template.Spec == nil || rjp.Template.Spec.Template == nil || rjp.Template.Spec.Template.Spec == nil {
				continue
			}
			podPatch := rjp.Template.Spec.Template.Spec
			podPath := path.Child("template", "spec", "template", "spec")
			errs = append(errs, validateContainerPatches(podPatch.Containers, rJob.Template.Spec.Template.Spec.Containers, podPath.Child("containers"))...)
			errs = append(errs, validateContainerPatches(podPatch.InitContainers, rJob.Template.Spec.Template.Spec.InitContainers, podPath.Child("initContainers"))...)
		}
	}
	return errs
}

func validateContainerPatches(patches []trainer.ContainerPatch, existing []corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, cp := range patches {
		cPath := path.Key(cp.Name)
		if !slices.ContainsFunc(existing, func(c corev1.Container) bool { return c.Name == cp.Name }) {
			errs = append(errs, field.NotFound(cPath, cp.Name))
			continue
		}
		switch cp.Name {
		case trainer.TrainerNodeName, trainer.DatasetInitializerName, trainer.ModelInitializerName:
			if len(cp.Env) > 0 {
				errs = append(errs, field.Forbidden(cPath.Child("env"),
					fmt.Sprintf("env of the %s container comes from the TrainJob's trainer and initializer fields", cp.Name)))
			}
		}
	}
	return errs
}
