package jobset

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Render builds the JobSet for trainJob from info. It is a pure function of
// its inputs and never modifies them.
//
// What lands where:
//   - every replicated job: replicas and parallelism/completions from its
//     PodSet, the PodSet's volumes, and each container's env, ports and
//     volume mounts as the plugins left them; the gang-scheduling pod labels
//     and annotations on every pod template;
//   - every replicated job: the init containers plugins add
//     (PodSet.ExtraInitContainers), after the template's;
//   - the trainer step's node container: the TrainJob's image, command and
//     args, or the command a plugin made of them (Info.TrainerCommand,
//     Info.TrainerArgsInCommand) (MPI workers keep the runtime's image and sshd); env and
//     resources were placed by the plugins and NewInfo, see
//     plugin.TrainerFieldsFor;
//   - initializer containers: STORAGE_URI, env and the credentials Secret
//     as envFrom;
//   - the JobSet: the runtime's labels and annotations, suspend, and the
//     TrainJob as controller owner.
func Render(info *plugin.Info, trainJob *trainer.TrainJob) *jobsetv1alpha2.JobSet {
	meta := plugin.OwnedObjectMeta(trainJob.Name, trainJob, info.Labels)
	if len(info.Annotations) > 0 {
		meta.Annotations = maps.Clone(info.Annotations)
	}
	js := &jobsetv1alpha2.JobSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet"},
		ObjectMeta: meta,
		Spec:       *info.Template.DeepCopy(),
	}
	for i := range js.Spec.ReplicatedJobs {
		rJob := &js.Spec.ReplicatedJobs[i]
		ps := &info.PodSets[i]
		renderReplicatedJob(rJob, ps, info, trainJob)
	}
	js.Spec.Suspend = ptr.To(ptr.Deref(trainJob.Spec.Suspend, false))
	return js
}

func renderReplicatedJob(rJob *jobsetv1alpha2.ReplicatedJob, ps *plugin.PodSet, info *plugin.Info, trainJob *trainer.TrainJob) {
	rJob.Replicas = ps.Replicas
	rJob.Template.Spec.Parallelism = ptr.To(ps.Count)
	rJob.Template.Spec.Completions = ptr.To(ps.Count)

	podTemplate := &rJob.Template.Spec.Template
	podTemplate.Spec.Volumes = deepCopyVolumes(ps.Volumes)
	podTemplate.Labels = mergeMaps(podTemplate.Labels, info.Scheduler.PodLabels)
	podTemplate.Annotations = mergeMaps(podTemplate.Annotations, info.Scheduler.PodAnnotations)
	writeBackContainers(podTemplate.Spec.InitContainers, ps.InitContainers)
	writeBackContainers(podTemplate.Spec.Containers, ps.Containers)
	appendInitContainers(&podTemplate.Spec.InitContainers, ps.ExtraInitContainers)

	for j := range podTemplate.Spec.Containers {
		c := &podTemplate.Spec.Containers[j]
		// Upstream's Builder.Trainer (jobset/builder.go): the trainer step's
		// node container only; MPI workers keep the runtime's image and sshd.
		// A plugin's TrainerCommand applies even without spec.trainer.
		if plugin.TrainerFieldsFor(rJob, c.Name, info.MLPolicy).ImageCommandArgs {
			t := trainJob.Spec.Trainer
			if t != nil && t.Image != nil {
				c.Image = *t.Image
			}
			switch {
			case info.TrainerCommand != nil:
				c.Command = slices.Clone(info.TrainerCommand)
			case t != nil && t.Command != nil:
				c.Command = slices.Clone(t.Command)
			}
			if t != nil && t.Args != nil && !info.TrainerArgsInCommand {
				c.Args = slices.Clone(t.Args)
			}
		}
		// Upstream's Builder.Trainer upserts the TrainJob's env last: after
		// the JAX, XGBoost and MPI variables (torch and plainml put it
		// first already, and an upsert keeps its place).
		if t := trainJob.Spec.Trainer; t != nil && len(t.Env) > 0 && plugin.TrainerFieldsFor(rJob, c.Name, info.MLPolicy).Env {
			plugin.UpsertEnv(&c.Env, t.Env...)
		}
		renderInitializer(c, ps, trainJob)
	}
}

// renderInitializer applies spec.initializer.{dataset,model} to the
// matching initializer container.
func renderInitializer(c *corev1.Container, ps *plugin.PodSet, trainJob *trainer.TrainJob) {
	init := trainJob.Spec.Initializer
	if init == nil {
		return
	}
	var storageURI *string
	var env []corev1.EnvVar
	var secret *corev1.LocalObjectReference
	switch {
	case isStep(ps, trainer.AncestorDatasetInitializer) && c.Name == trainer.DatasetInitializerName && init.Dataset != nil:
		storageURI, env, secret = init.Dataset.StorageURI, init.Dataset.Env, init.Dataset.SecretRef
	case isStep(ps, trainer.AncestorModelInitializer) && c.Name == trainer.ModelInitializerName && init.Model != nil:
		storageURI, env, secret = init.Model.StorageURI, init.Model.Env, init.Model.SecretRef
	default:
		return
	}
	if storageURI != nil {
		plugin.UpsertEnv(&c.Env, corev1.EnvVar{Name: InitializerEnvStorageURI, Value: *storageURI})
	}
	plugin.UpsertEnv(&c.Env, env...)
	if secret != nil && !slices.ContainsFunc(c.EnvFrom, func(s corev1.EnvFromSource) bool {
		return s.SecretRef != nil && s.SecretRef.Name == secret.Name
	}) {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: *secret}})
	}
}

// isStep: the replicated job is labelled as that TrainJob step. A job
// merely named like a step is not one (Trainer v2.3 goes by the label).
func isStep(ps *plugin.PodSet, ancestor string) bool {
	return ps.Ancestor == ancestor
}

// writeBackContainers replaces env, ports and volume mounts with the PodSet's
// lists, which started as copies of these and only had entries upserted.
func writeBackContainers(containers []corev1.Container, from []plugin.Container) {
	for j := range containers {
		idx := slices.IndexFunc(from, func(c plugin.Container) bool { return c.Name == containers[j].Name })
		if idx < 0 {
			continue
		}
		src := from[idx]
		containers[j].Env = deepCopyEnv(src.Env)
		containers[j].Ports = slices.Clone(src.Ports)
		containers[j].VolumeMounts = slices.Clone(src.VolumeMounts)
	}
}

// appendInitContainers adds the init containers a plugin contributed
// (PodSet.ExtraInitContainers) after the template's, replacing one of the
// same name in place.
func appendInitContainers(containers *[]corev1.Container, extra []corev1.Container) {
	for _, c := range extra {
		c := *c.DeepCopy()
		if idx := slices.IndexFunc(*containers, func(existing corev1.Container) bool { return existing.Name == c.Name }); idx >= 0 {
			(*containers)[idx] = c
			continue
		}
		*containers = append(*containers, c)
	}
}

func deepCopyEnv(in []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range in {
		out = append(out, *e.DeepCopy())
	}
	return out
}

func deepCopyVolumes(in []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range in {
		out = append(out, *v.DeepCopy())
	}
	return out
}

// mergeMaps returns base with overrides on top, or nil when both are empty
// so that an unset map stays unset in the rendered object.
func mergeMaps(base, overrides map[string]string) map[string]string {
	if len(base) == 0 && len(overrides) == 0 {
		return base
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, overrides)
	return out
}
