package jobset

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "JobSet"

// InitializerEnvStorageURI tells an initializer where to download from.
const InitializerEnvStorageURI = "STORAGE_URI"

// JobSet implements validation, pod network and component building.
type JobSet struct{}

var (
	_ plugin.CustomValidationPlugin = JobSet{}
	_ plugin.PodNetworkPlugin       = JobSet{}
	_ plugin.ComponentBuilderPlugin = JobSet{}
)

// Name implements plugin.Plugin.
func (JobSet) Name() string { return Name }

// Validate checks that every part of the TrainJob that overrides a runtime
// step has that step (and its container) to override, so a typo in a
// runtime does not silently drop the user's image or dataset.
func (JobSet) Validate(info *plugin.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if info == nil {
		return nil
	}
	var errs field.ErrorList
	runtimeRef := field.NewPath("spec", "runtimeRef")
	if init := newJob.Spec.Initializer; init != nil {
		if init.Dataset != nil {
			errs = append(errs, requireStep(info, trainer.AncestorDatasetInitializer, trainer.DatasetInitializerName, runtimeRef, newJob.Spec.RuntimeRef)...)
		}
		if init.Model != nil {
			errs = append(errs, requireStep(info, trainer.AncestorModelInitializer, trainer.ModelInitializerName, runtimeRef, newJob.Spec.RuntimeRef)...)
		}
	}
	if newJob.Spec.Trainer != nil {
		// An MPI launcher running as a node may keep its launcher container name.
		errs = append(errs, requireStep(info, trainer.AncestorTrainer, trainer.TrainerNodeName, runtimeRef, newJob.Spec.RuntimeRef, trainer.LauncherName)...)
	}
	return errs
}

func requireStep(info *plugin.Info, ancestor, container string, path *field.Path, ref trainer.RuntimeRef, alsoAccepted ...string) field.ErrorList {
	ps := stepPodSet(info, ancestor)
	if ps == nil {
		return field.ErrorList{field.Invalid(path, ref, fmt.Sprintf(
			"the runtime must have a replicated job labelled %s=%s", trainer.LabelTrainJobAncestor, ancestor))}
	}
	accepted := func(name string) bool {
		if ps.FindContainer(name) == nil {
			return false
		}
		idx := slices.IndexFunc(info.PodSets, func(p plugin.PodSet) bool { return p.Name == ps.Name })
		return name == container || plugin.IsTrainerNodeContainer(&info.Template.ReplicatedJobs[idx], name, info.MLPolicy)
	}
	if !accepted(container) && !slices.ContainsFunc(alsoAccepted, accepted) {
		return field.ErrorList{field.Invalid(path, ref, fmt.Sprintf(
			"the runtime's %s job must have a container named %s", ps.Name, container))}
	}
	return nil
}

// stepPodSet finds a TrainJob step by its ancestor label; runtimes written
// before the label existed are matched by the conventional job name.
func stepPodSet(info *plugin.Info, ancestor string) *plugin.PodSet {
	if ps := info.FindPodSetByAncestor(ancestor); ps != nil {
		return ps
	}
	if ancestor == trainer.AncestorTrainer {
		return nil
	}
	return info.FindPodSetByName(ancestor)
}

// IdentifyPodNetwork lists the DNS name of every pod JobSet will create:
// <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>.
func (JobSet) IdentifyPodNetwork(info *plugin.Info, trainJob *trainer.TrainJob) error {
	for i := range info.PodSets {
		ps := &info.PodSets[i]
		ps.Endpoints = ps.Endpoints[:0]
		for replica := range ps.Replicas {
			for pod := range ps.Count {
				ps.Endpoints = append(ps.Endpoints, info.PodHostname(trainJob.Name, ps.Name, int(replica), int(pod)))
			}
		}
	}
	return nil
}

// Build returns the JobSet, unless it exists and neither it nor the TrainJob
// is suspended: a running JobSet's replicated jobs are immutable, so only
// suspend (and the resume after it) may change them. The exception is an
// elastic PyTorch job whose node count changed: JobSet (with its
// ElasticJobSet gate) lets the trainer job's parallelism and completions
// change in place, and the rest of what is rendered is what was rendered
// when the JobSet was created.
func (JobSet) Build(ctx context.Context, existing client.Reader, info *plugin.Info, trainJob *trainer.TrainJob) ([]plugin.Component, error) {
	var current jobsetv1alpha2.JobSet
	err := existing.Get(ctx, client.ObjectKeyFromObject(trainJob), &current)
	switch {
	case err == nil:
		if !ptr.Deref(trainJob.Spec.Suspend, false) && !ptr.Deref(current.Spec.Suspend, false) && !elasticResize(info, &current) {
			return nil, nil
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("looking up JobSet %s: %w", client.ObjectKeyFromObject(trainJob), err)
	}
	return []plugin.Component{{Object: Render(info, trainJob)}}, nil
}

// elasticResize reports whether a running JobSet of an elastic PyTorch job
// has another trainer node count than the TrainJob asks for, and is not
// finished (JobSet refuses resizing a finished one).
func elasticResize(info *plugin.Info, current *jobsetv1alpha2.JobSet) bool {
	if info.MLPolicy == nil || info.MLPolicy.Torch == nil || info.MLPolicy.Torch.ElasticPolicy == nil {
		return false
	}
	for _, c := range current.Status.Conditions {
		if (c.Type == string(jobsetv1alpha2.JobSetCompleted) || c.Type == string(jobsetv1alpha2.JobSetFailed)) && c.Status == metav1.ConditionTrue {
			return false
		}
	}
	ps := info.TrainerPodSet()
	if ps == nil {
		return false
	}
	for _, rj := range current.Spec.ReplicatedJobs {
		if rj.Name == ps.Name {
			return !ptr.Equal(rj.Template.Spec.Parallelism, ptr.To(ps.Count)) || !ptr.Equal(rj.Template.Spec.Completions, ptr.To(ps.Count))
		}
	}
	return false
}
