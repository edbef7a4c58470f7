package plugin

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// Info is what a runtime plus a TrainJob resolve to before any object is
// rendered. Plugins edit PodSets, Scheduler and MLPolicy; the JobSet plugin
// renders Template with those edits. Info never aliases the runtime or the
// TrainJob it was built from, so plugins may mutate it freely.
type Info struct {
	// Labels and Annotations go onto the JobSet (runtime template metadata
	// plus JobSet-level runtime patches).
	Labels      map[string]string
	Annotations map[string]string

	// MLPolicy is a copy of the runtime's policy; plugins record resolved
	// values here (e.g. MPI slots) so later extension points see them.
	MLPolicy       *trainer.MLPolicy
	PodGroupPolicy *trainer.PodGroupPolicy

	// Template is the runtime's JobSet spec after runtime patches and with
	// the TrainJob's resourcesPerNode applied. PodSets[i] describes
	// Template.ReplicatedJobs[i].
	Template jobsetv1alpha2.JobSetSpec
	PodSets  []PodSet

	Scheduler Scheduler

	// TrainerCommand, when set, replaces spec.trainer.command on the
	// containers that take it, also when the TrainJob has no spec.trainer:
	// a plugin completed or wrapped the command (torchtune's `tune run`,
	// Flux's entrypoint). The TrainJob itself is never changed.
	TrainerCommand []string
	// TrainerArgsInCommand, when true, keeps spec.trainer.args off those
	// containers: the plugin that set TrainerCommand folded them into it
	// (Flux hands the whole command line to its entrypoint). The runtime's
	// own args, if any, stay, as in Trainer.
	TrainerArgsInCommand bool

	// Warnings are conditions worth an event that do not stop the build,
	// e.g. a gang-scheduling policy whose CRD is not installed.
	Warnings []string
}

// PodSet is one replicated job seen as a group of identical pods.
type PodSet struct {
	Name string
	// Ancestor is the replicated job's trainer.kubeflow.org/trainjob-ancestor-step label.
	Ancestor string
	// Replicas is the Jobs of the replicated job; the steps a TrainJob
	// overrides (initializers, trainer) always have one.
	Replicas int32
	// Count is the pods per Job (parallelism and completions).
	Count          int32
	InitContainers []Container
	Containers     []Container
	Volumes        []corev1.Volume
	// ExtraInitContainers are init containers a plugin adds to every pod of
	// the PodSet, complete (image, command, mounts): the render appends them
	// after the template's own, in this order, replacing a template init
	// container of the same name. A plugin that adds one should refuse, in
	// its validation, runtimes that already have that name.
	ExtraInitContainers []corev1.Container
	// Endpoints are the pods' DNS names, filled by the pod-network extension point.
	Endpoints []string
	// SinglePodRequests is what one pod requests; times Count gives the PodSet's total.
	SinglePodRequests corev1.ResourceList
}

// Container holds the parts of a container plugins may add to. They start as
// copies of the template's lists and replace them when rendered.
type Container struct {
	Name         string
	Env          []corev1.EnvVar
	Ports        []corev1.ContainerPort
	VolumeMounts []corev1.VolumeMount
	// Resources are the effective resources, for plugins that size by them;
	// editing them has no effect on the rendered object.
	Resources corev1.ResourceRequirements
}

// Scheduler carries pod metadata the gang-scheduling plugins need on every pod.
type Scheduler struct {
	PodLabels      map[string]string
	PodAnnotations map[string]string
}

// FindPodSetByName returns the PodSet of the replicated job name, or nil.
func (i *Info) FindPodSetByName(name string) *PodSet {
	if idx := slices.IndexFunc(i.PodSets, func(ps PodSet) bool { return ps.Name == name }); idx >= 0 {
		return &i.PodSets[idx]
	}
	return nil
}

// FindPodSetByAncestor returns the first PodSet with the given ancestor label, or nil.
func (i *Info) FindPodSetByAncestor(ancestor string) *PodSet {
	if idx := slices.IndexFunc(i.PodSets, func(ps PodSet) bool { return ps.Ancestor == ancestor }); idx >= 0 {
		return &i.PodSets[idx]
	}
	return nil
}

// TrainerPodSet is the PodSet labelled as the trainer step, or nil.
func (i *Info) TrainerPodSet() *PodSet {
	return i.FindPodSetByAncestor(trainer.AncestorTrainer)
}

// FindContainer returns the container called name, or nil.
func (ps *PodSet) FindContainer(name string) *Container {
	if idx := slices.IndexFunc(ps.Containers, func(c Container) bool { return c.Name == name }); idx >= 0 {
		return &ps.Containers[idx]
	}
	return nil
}

// FindInitContainer returns the init container called name, or nil.
func (ps *PodSet) FindInitContainer(name string) *Container {
	if idx := slices.IndexFunc(ps.InitContainers, func(c Container) bool { return c.Name == name }); idx >= 0 {
		return &ps.InitContainers[idx]
	}
	return nil
}

// MPIPolicy returns the MPI policy, or nil when the runtime is not MPI.
func (i *Info) MPIPolicy() *trainer.MPIMLPolicySource {
	if i.MLPolicy == nil {
		return nil
	}
	return i.MLPolicy.MPI
}

// Subdomain is the headless Service name JobSet gives the pods: the JobSet's
// network.subdomain when the runtime sets one, else the JobSet (TrainJob) name.
func (i *Info) Subdomain(trainJobName string) string {
	if i.Template.Network != nil && i.Template.Network.Subdomain != "" {
		return i.Template.Network.Subdomain
	}
	return trainJobName
}

// DefaultClusterDomain is the cluster DNS suffix where the manager is given
// none (CLUSTER_DOMAIN), as Trainer and KubeRay assume.
const DefaultClusterDomain = "cluster.local"

// ClusterDomain is domain, or DefaultClusterDomain when it is empty.
func ClusterDomain(domain string) string {
	if domain == "" {
		return DefaultClusterDomain
	}
	return domain
}

// PodHostname is the DNS name of a JobSet pod, JobSet's
// "<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>", for the
// TrainJob's JobSet (named after the TrainJob).
func (i *Info) PodHostname(trainJobName, replicatedJob string, jobIndex, podIndex int) string {
	return fmt.Sprintf("%s-%s-%d-%d.%s", trainJobName, replicatedJob, jobIndex, podIndex, i.Subdomain(trainJobName))
}

// Where a TrainJob's spec.trainer lands, as in Trainer v2.3.0 (the runtime
// webhook makes every trainer step have a container "node"):
//
//	field              replicated job + container
//	image,command,args "node" of each job labelled trainjob-ancestor-step=trainer
//	                   (pkg/runtime/framework/plugins/jobset/builder.go, Builder.Trainer)
//	env                the same, plus, for MPI with runLauncherAsNode, "node" of the
//	                   job named "node" (builder.go, Builder.Trainer)
//	resourcesPerNode   the same two, merged per key onto the runtime's resources
//	                   (pkg/runtime/core/trainingruntime.go, newRuntimeInfo, with
//	                   pkg/util/trainingruntime MergeResourceRequirements); the trainer
//	                   step only when the runtime has an mlPolicy
//
// So torch, JAX, XGBoost and plain runtimes change only the trainer step's
// node container; an MPI launcher (the trainer step of deepspeed-distributed
// and mlx-distributed) gets everything, and the MPI workers (job "node",
// running sshd on the runtime's image) get nothing with runLauncherAsNode
// false, env and resources with it true, never image, command or args.

// TrainerFields says which of spec.trainer's fields a container receives.
type TrainerFields struct {
	// ImageCommandArgs: spec.trainer.image, command and args.
	ImageCommandArgs bool
	// Env: spec.trainer.env.
	Env bool
	// Resources: spec.trainer.resourcesPerNode, merged onto the container's.
	Resources bool
}

// TrainerFieldsFor places spec.trainer's fields as Trainer v2.3.0 does; see
// the table above.
func TrainerFieldsFor(rJob *jobsetv1alpha2.ReplicatedJob, containerName string, mlPolicy *trainer.MLPolicy) TrainerFields {
	if IsTrainerNodeContainer(rJob, containerName, mlPolicy) {
		return TrainerFields{ImageCommandArgs: true, Env: true, Resources: mlPolicy != nil}
	}
	if isMPIWorkerRunningAsNode(rJob, containerName, mlPolicy) {
		return TrainerFields{Env: true, Resources: true}
	}
	return TrainerFields{}
}

// IsTrainerNodeContainer reports whether a container is the trainer step's
// node container: container "node" of a replicated job labelled as the
// trainer step. Gantry also accepts a container still called launcher in
// the trainer step of an MPI runtime that runs the launcher as a node (its
// runtime webhook admits such runtimes; upstream's rejects them).
func IsTrainerNodeContainer(rJob *jobsetv1alpha2.ReplicatedJob, containerName string, mlPolicy *trainer.MLPolicy) bool {
	if rJob.Template.Labels[trainer.LabelTrainJobAncestor] != trainer.AncestorTrainer {
		return false
	}
	switch containerName {
	case trainer.TrainerNodeName:
		return true
	case trainer.LauncherName:
		return runsLauncherAsNode(mlPolicy)
	}
	return false
}

// isMPIWorkerRunningAsNode: container "node" of the replicated job named
// "node" when the MPI launcher runs as a node, whatever the job's labels.
func isMPIWorkerRunningAsNode(rJob *jobsetv1alpha2.ReplicatedJob, containerName string, mlPolicy *trainer.MLPolicy) bool {
	return runsLauncherAsNode(mlPolicy) && rJob.Name == trainer.TrainerNodeName && containerName == trainer.TrainerNodeName
}

func runsLauncherAsNode(mlPolicy *trainer.MLPolicy) bool {
	return mlPolicy != nil && mlPolicy.MPI != nil && mlPolicy.MPI.RunLauncherAsNode != nil && *mlPolicy.MPI.RunLauncherAsNode
}
