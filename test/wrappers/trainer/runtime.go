package trainertesting

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// RuntimeSpecWrapper builds a TrainingRuntimeSpec.
type RuntimeSpecWrapper struct {
	trainer.TrainingRuntimeSpec
}

// MakeRuntimeSpec starts an empty runtime spec.
func MakeRuntimeSpec() *RuntimeSpecWrapper { return &RuntimeSpecWrapper{} }

// Obj returns a copy of the spec.
func (w *RuntimeSpecWrapper) Obj() *trainer.TrainingRuntimeSpec {
	return w.TrainingRuntimeSpec.DeepCopy()
}

func (w *RuntimeSpecWrapper) mlPolicy() *trainer.MLPolicy {
	if w.MLPolicy == nil {
		w.MLPolicy = &trainer.MLPolicy{}
	}
	return w.MLPolicy
}

// NumNodes sets mlPolicy.numNodes.
func (w *RuntimeSpecWrapper) NumNodes(n int32) *RuntimeSpecWrapper {
	w.mlPolicy().NumNodes = ptr.To(n)
	return w
}

// Torch selects the torch policy; numProcPerNode may be nil.
func (w *RuntimeSpecWrapper) Torch(numProcPerNode *intstr.IntOrString) *RuntimeSpecWrapper {
	w.mlPolicy().Torch = &trainer.TorchMLPolicySource{NumProcPerNode: numProcPerNode}
	return w
}

// TorchEnvInjection adds PET_* injection targets to the torch policy.
func (w *RuntimeSpecWrapper) TorchEnvInjection(targets ...trainer.TorchEnvInjectionTarget) *RuntimeSpecWrapper {
	w.mlPolicy().Torch.EnvInjection = &trainer.TorchEnvInjection{Targets: targets}
	return w
}

// TorchElastic gives the torch policy (set it first) an elastic policy.
func (w *RuntimeSpecWrapper) TorchElastic(minNodes, maxNodes int32, maxRestarts *int32) *RuntimeSpecWrapper {
	w.mlPolicy().Torch.ElasticPolicy = &trainer.TorchElasticPolicy{MinNodes: minNodes, MaxNodes: maxNodes, MaxRestarts: maxRestarts}
	return w
}

// MPI selects the MPI policy with the CRD defaults filled in, as the API
// server would store it.
func (w *RuntimeSpecWrapper) MPI(slots int32, runLauncherAsNode bool) *RuntimeSpecWrapper {
	w.mlPolicy().MPI = &trainer.MPIMLPolicySource{
		NumProcPerNode:    ptr.To(slots),
		MPIImplementation: ptr.To(trainer.MPIImplementationOpenMPI),
		SSHAuthMountPath:  ptr.To("/root/.ssh"),
		RunLauncherAsNode: ptr.To(runLauncherAsNode),
	}
	return w
}

// MPIImplementation overrides the MPI implementation.
func (w *RuntimeSpecWrapper) MPIImplementation(impl trainer.MPIImplementation) *RuntimeSpecWrapper {
	w.mlPolicy().MPI.MPIImplementation = ptr.To(impl)
	return w
}

// SSHAuthMountPath overrides where MPI mounts the SSH keys.
func (w *RuntimeSpecWrapper) SSHAuthMountPath(path string) *RuntimeSpecWrapper {
	w.mlPolicy().MPI.SSHAuthMountPath = ptr.To(path)
	return w
}

// JAX selects the JAX policy.
func (w *RuntimeSpecWrapper) JAX() *RuntimeSpecWrapper {
	w.mlPolicy().JAX = &trainer.JAXMLPolicySource{}
	return w
}

// XGBoost selects the XGBoost policy.
func (w *RuntimeSpecWrapper) XGBoost() *RuntimeSpecWrapper {
	w.mlPolicy().XGBoost = &trainer.XGBoostMLPolicySource{}
	return w
}

// Flux selects the Flux policy, with numProcPerNode unset (the API server
// defaults it to 1; the plugin takes unset as 1).
func (w *RuntimeSpecWrapper) Flux() *RuntimeSpecWrapper {
	w.mlPolicy().Flux = &trainer.FluxMLPolicySource{}
	return w
}

// Coscheduling sets the coscheduling pod group policy; timeout may be nil.
func (w *RuntimeSpecWrapper) Coscheduling(timeout *int32) *RuntimeSpecWrapper {
	w.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{
		Coscheduling: &trainer.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: timeout},
	}}
	return w
}

// Volcano sets the Volcano pod group policy, which Gantry does not support.
func (w *RuntimeSpecWrapper) Volcano() *RuntimeSpecWrapper {
	w.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{
		Volcano: &trainer.VolcanoPodGroupPolicySource{},
	}}
	return w
}

// Labels sets the JobSet template's labels.
func (w *RuntimeSpecWrapper) Labels(l map[string]string) *RuntimeSpecWrapper {
	w.Template.Labels = l
	return w
}

// Annotations sets the JobSet template's annotations.
func (w *RuntimeSpecWrapper) Annotations(a map[string]string) *RuntimeSpecWrapper {
	w.Template.Annotations = a
	return w
}

// Subdomain sets the JobSet's network.subdomain.
func (w *RuntimeSpecWrapper) Subdomain(s string) *RuntimeSpecWrapper {
	w.Template.Spec.Network = &jobsetv1alpha2.Network{Subdomain: s}
	return w
}

// ReplicatedJob appends replicated jobs to the template.
func (w *RuntimeSpecWrapper) ReplicatedJob(jobs ...jobsetv1alpha2.ReplicatedJob) *RuntimeSpecWrapper {
	w.Template.Spec.ReplicatedJobs = append(w.Template.Spec.ReplicatedJobs, jobs...)
	return w
}

// ReplicatedJob is a replicated job of one pod template; ancestor, when not
// empty, becomes the trainer.kubeflow.org/trainjob-ancestor-step label.
func ReplicatedJob(name, ancestor string, containers ...corev1.Container) jobsetv1alpha2.ReplicatedJob {
	rj := jobsetv1alpha2.ReplicatedJob{
		Name: name,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: containers},
		}}},
	}
	if ancestor != "" {
		rj.Template.Labels = map[string]string{trainer.LabelTrainJobAncestor: ancestor}
	}
	return rj
}

// TrainerJob is the usual trainer step: job "node" with container "node".
func TrainerJob(image string) jobsetv1alpha2.ReplicatedJob {
	return ReplicatedJob(trainer.TrainerNodeName, trainer.AncestorTrainer, MakeContainer(trainer.TrainerNodeName, image).Obj())
}

// InitializerJobs are the dataset and model initializer steps.
func InitializerJobs() []jobsetv1alpha2.ReplicatedJob {
	return []jobsetv1alpha2.ReplicatedJob{
		ReplicatedJob(trainer.DatasetInitializerName, trainer.AncestorDatasetInitializer,
			MakeContainer(trainer.DatasetInitializerName, "dataset-initializer:v1").VolumeMount(InitializerVolume, "/workspace").Obj()),
		ReplicatedJob(trainer.ModelInitializerName, trainer.AncestorModelInitializer,
			MakeContainer(trainer.ModelInitializerName, "model-initializer:v1").VolumeMount(InitializerVolume, "/workspace").Obj()),
	}
}

// InitializerVolume is the volume an initializer container must mount
// (Trainer v2.3's admission rule): where it downloads for the trainer.
const InitializerVolume = "initializer"

// MPIJobs are the node and launcher jobs of an MPI runtime, as upstream's
// mpi-distributed runtime lays them out: workers run sshd, the launcher
// (the trainer step) runs mpirun from a container called node.
func MPIJobs(image string) []jobsetv1alpha2.ReplicatedJob {
	return []jobsetv1alpha2.ReplicatedJob{
		ReplicatedJob(trainer.TrainerNodeName, "", MakeContainer(trainer.TrainerNodeName, image).Command("/usr/sbin/sshd", "-De").Obj()),
		ReplicatedJob(trainer.LauncherName, trainer.AncestorTrainer, MakeContainer(trainer.TrainerNodeName, image).Command("mpirun", "app").Obj()),
	}
}

// ContainerWrapper builds a container.
type ContainerWrapper struct{ corev1.Container }

// MakeContainer starts a container.
func MakeContainer(name, image string) *ContainerWrapper {
	return &ContainerWrapper{corev1.Container{Name: name, Image: image}}
}

// Obj returns a copy of the container.
func (w *ContainerWrapper) Obj() corev1.Container { return *w.Container.DeepCopy() }

// VolumeMount mounts the named volume at path.
func (w *ContainerWrapper) VolumeMount(name, path string) *ContainerWrapper {
	w.VolumeMounts = append(w.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: path})
	return w
}

// Command sets the command.
func (w *ContainerWrapper) Command(cmd ...string) *ContainerWrapper {
	w.Container.Command = cmd
	return w
}

// Env adds an env var.
func (w *ContainerWrapper) Env(name, value string) *ContainerWrapper {
	w.Container.Env = append(w.Container.Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

// Resources sets requests and limits.
func (w *ContainerWrapper) Resources(requests, limits corev1.ResourceList) *ContainerWrapper {
	w.Container.Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
	return w
}

// ClusterTrainingRuntimeWrapper builds a ClusterTrainingRuntime.
type ClusterTrainingRuntimeWrapper struct{ trainer.ClusterTrainingRuntime }

// MakeClusterTrainingRuntime starts a ClusterTrainingRuntime.
func MakeClusterTrainingRuntime(name string) *ClusterTrainingRuntimeWrapper {
	return &ClusterTrainingRuntimeWrapper{trainer.ClusterTrainingRuntime{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.ClusterTrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Spec sets the spec.
func (w *ClusterTrainingRuntimeWrapper) Spec(s *trainer.TrainingRuntimeSpec) *ClusterTrainingRuntimeWrapper {
	w.ClusterTrainingRuntime.Spec = *s.DeepCopy()
	return w
}

// Obj returns a copy.
func (w *ClusterTrainingRuntimeWrapper) Obj() *trainer.ClusterTrainingRuntime {
	return w.ClusterTrainingRuntime.DeepCopy()
}

// TrainingRuntimeWrapper builds a TrainingRuntime.
type TrainingRuntimeWrapper struct{ trainer.TrainingRuntime }

// MakeTrainingRuntime starts a TrainingRuntime in ns.
func MakeTrainingRuntime(name, ns string) *TrainingRuntimeWrapper {
	return &TrainingRuntimeWrapper{trainer.TrainingRuntime{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
	}}
}

// Spec sets the spec.
func (w *TrainingRuntimeWrapper) Spec(s *trainer.TrainingRuntimeSpec) *TrainingRuntimeWrapper {
	w.TrainingRuntime.Spec = *s.DeepCopy()
	return w
}

// Obj returns a copy.
func (w *TrainingRuntimeWrapper) Obj() *trainer.TrainingRuntime { return w.TrainingRuntime.DeepCopy() }
