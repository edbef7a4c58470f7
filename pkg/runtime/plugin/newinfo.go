package plugin

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// NewInfo resolves a runtime spec and a TrainJob into Info, before any
// plugin runs: runtime patches merged, the TrainJob's resourcesPerNode merged
// onto the containers upstream gives them to (TrainerFieldsFor), one PodSet per
// replicated job. Pod counts start from the runtime (mlPolicy.numNodes for
// the trainer step, parallelism elsewhere); the ML plugins apply the
// TrainJob's numNodes. Errors are BuildErrors.
func NewInfo(trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) (*Info, error) {
	if trainJob == nil {
		return nil, NewBuildError("no TrainJob")
	}
	if spec == nil {
		return nil, NewBuildError("no runtime spec")
	}
	tmpl := spec.Template.DeepCopy()
	info := &Info{
		Labels:         cloneOrEmpty(tmpl.Labels),
		Annotations:    cloneOrEmpty(tmpl.Annotations),
		MLPolicy:       spec.MLPolicy.DeepCopy(),
		PodGroupPolicy: spec.PodGroupPolicy.DeepCopy(),
		Scheduler:      Scheduler{PodLabels: map[string]string{}, PodAnnotations: map[string]string{}},
	}
	if len(tmpl.Spec.ReplicatedJobs) == 0 {
		return nil, NewBuildError("the runtime's template has no replicatedJobs")
	}
	if errs := ValidateRuntimePatches(trainJob, &tmpl.Spec); len(errs) > 0 {
		return nil, &BuildError{Err: errs.ToAggregate()}
	}
	if err := applyRuntimePatches(trainJob, &tmpl.Spec, info.Labels, info.Annotations); err != nil {
		return nil, &BuildError{Err: err}
	}
	if t := trainJob.Spec.Trainer; t != nil && t.ResourcesPerNode != nil {
		// Upstream's newRuntimeInfo (pkg/runtime/core/trainingruntime.go):
		// merged onto the runtime's resources, see TrainerFieldsFor.
		for i := range tmpl.Spec.ReplicatedJobs {
			rJob := &tmpl.Spec.ReplicatedJobs[i]
			for j := range rJob.Template.Spec.Template.Spec.Containers {
				c := &rJob.Template.Spec.Template.Spec.Containers[j]
				if TrainerFieldsFor(rJob, c.Name, info.MLPolicy).Resources {
					merged, err := MergeResourceRequirements(c.Resources, *t.ResourcesPerNode)
					if err != nil {
						return nil, &BuildError{Err: fmt.Errorf("merging spec.trainer.resourcesPerNode into %s/%s: %w", rJob.Name, c.Name, err)}
					}
					c.Resources = merged
				}
			}
		}
	}
	info.Template = tmpl.Spec

	for i := range info.Template.ReplicatedJobs {
		rJob := &info.Template.ReplicatedJobs[i]
		podSpec := &rJob.Template.Spec.Template.Spec
		ps := PodSet{
			Name:              rJob.Name,
			Ancestor:          rJob.Template.Labels[trainer.LabelTrainJobAncestor],
			Replicas:          max(1, rJob.Replicas),
			Count:             max(1, ptr.Deref(rJob.Template.Spec.Parallelism, 1)),
			InitContainers:    toContainers(podSpec.InitContainers),
			Containers:        toContainers(podSpec.Containers),
			SinglePodRequests: PodRequests(podSpec),
		}
		for _, v := range podSpec.Volumes {
			ps.Volumes = append(ps.Volumes, *v.DeepCopy())
		}
		switch ps.Ancestor {
		case trainer.AncestorDatasetInitializer, trainer.AncestorModelInitializer, trainer.AncestorTrainer:
			// Upstream runs one Job for each of these steps
			// (kubeflow/trainer#2318); a job with any other ancestor label
			// keeps the runtime's replicas.
			ps.Replicas = 1
		}
		if ps.Ancestor == trainer.AncestorTrainer && info.MLPolicy != nil {
			ps.Count = max(1, ptr.Deref(info.MLPolicy.NumNodes, 1))
		}
		info.PodSets = append(info.PodSets, ps)
	}
	return info, nil
}

func toContainers(in []corev1.Container) []Container {
	var out []Container
	for _, c := range in {
		dc := c.DeepCopy()
		out = append(out, Container{
			Name:         dc.Name,
			Env:          dc.Env,
			Ports:        dc.Ports,
			VolumeMounts: dc.VolumeMounts,
			Resources:    dc.Resources,
		})
	}
	return out
}

func cloneOrEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

// TrainerNumNodes is the trainer's node count: the TrainJob's numNodes, else
// the runtime's mlPolicy.numNodes, else 1.
func TrainerNumNodes(info *Info, trainJob *trainer.TrainJob) int32 {
	if t := trainJob.Spec.Trainer; t != nil && t.NumNodes != nil {
		return max(1, *t.NumNodes)
	}
	if info.MLPolicy != nil && info.MLPolicy.NumNodes != nil {
		return max(1, *info.MLPolicy.NumNodes)
	}
	return 1
}

// ApplyTrainerCount gives the trainer PodSet the TrainJob's numNodes when
// set (NewInfo already applied the runtime's): what every ML plugin does
// first.
func ApplyTrainerCount(info *Info, trainJob *trainer.TrainJob) {
	if ps := info.TrainerPodSet(); ps != nil && trainJob.Spec.Trainer != nil && trainJob.Spec.Trainer.NumNodes != nil {
		ps.Count = max(1, *trainJob.Spec.Trainer.NumNodes)
	}
}

// ApplyTrainerCountAndEnv is ApplyTrainerCount, then the TrainJob's env on
// every trainer node container before the plugin adds its own variables,
// as Trainer's torch and plainml plugins do: the user's variables come
// first in the list. The other policies (JAX, XGBoost, MPI) leave the
// user's env to the JobSet render, which appends it after theirs, as
// Trainer's JobSet builder does.
func ApplyTrainerCountAndEnv(info *Info, trainJob *trainer.TrainJob) {
	ApplyTrainerCount(info, trainJob)
	ApplyTrainerEnv(info, trainJob)
}

// ApplyTrainerEnv upserts the TrainJob's trainer env into every container
// upstream gives it to (TrainerFieldsFor): the trainer node containers and,
// when an MPI launcher runs as a node, the workers' node container.
func ApplyTrainerEnv(info *Info, trainJob *trainer.TrainJob) {
	if trainJob.Spec.Trainer == nil || len(trainJob.Spec.Trainer.Env) == 0 {
		return
	}
	for i := range info.PodSets {
		rJob := &info.Template.ReplicatedJobs[i]
		for j := range info.PodSets[i].Containers {
			c := &info.PodSets[i].Containers[j]
			if TrainerFieldsFor(rJob, c.Name, info.MLPolicy).Env {
				UpsertEnv(&c.Env, trainJob.Spec.Trainer.Env...)
			}
		}
	}
}
