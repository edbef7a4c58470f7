package v1alpha1

import "k8s.io/apimachinery/pkg/util/intstr"

// MLPolicy holds the framework settings of a runtime. Exactly one framework
// plugin may own the trainer step, so at most one policy source is allowed.
//
// +kubebuilder:validation:XValidation:rule="[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost), has(self.flux)].filter(x, x).size() <= 1",message="Only one of the policy can be configured"
type MLPolicy struct {
	// numNodes is the default node count; TrainJob.spec.trainer.numNodes
	// overrides it. Defaults to 1 when neither is set.
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty"`

	MLPolicySource `json:",inline"`
}

// MLPolicySource lists the framework policies; at most one is set.
type MLPolicySource struct {
	// torch runs the trainer through torchrun (PET_* environment).
	// +optional
	Torch *TorchMLPolicySource `json:"torch,omitempty"`

	// mpi runs the trainer through mpirun with a launcher and SSH between nodes.
	// +optional
	MPI *MPIMLPolicySource `json:"mpi,omitempty"`

	// jax configures JAX distributed initialisation.
	// +optional
	JAX *JAXMLPolicySource `json:"jax,omitempty"`

	// xgboost configures XGBoost collective (Rabit) training.
	// +optional
	XGBoost *XGBoostMLPolicySource `json:"xgboost,omitempty"`

	// flux runs the trainer under the Flux HPC framework.
	// +optional
	Flux *FluxMLPolicySource `json:"flux,omitempty"`
}

// TorchMLPolicySource configures the torch plugin.
type TorchMLPolicySource struct {
	// numProcPerNode is the Trainer v2.0/v2.1 per-node process count (auto,
	// cpu, gpu or a positive integer). Trainer v2.2 dropped it in favour of
	// TrainJob.spec.trainer.numProcPerNode and resource-derived counts; it is
	// still accepted so that runtimes written for older releases apply
	// unchanged. It has no default, so a v2.3 manifest stores exactly as
	// written.
	// +kubebuilder:validation:XValidation:rule="self > 0 || self in ['auto', 'cpu', 'gpu']",message="NumProcPerNode must be equal to auto, cpu, gpu, or int value"
	// +optional
	NumProcPerNode *intstr.IntOrString `json:"numProcPerNode,omitempty"`

	// envInjection also gives the PET_* variables to sidecars and init
	// containers (e.g. a pre-flight connectivity check); by default only the
	// node container gets them.
	// +optional
	EnvInjection *TorchEnvInjection `json:"envInjection,omitempty"`

	// elasticPolicy runs torchrun in elastic mode: a c10d rendezvous on the
	// first node instead of fixed node ranks, so a TrainJob on this runtime
	// may change spec.trainer.numNodes between minNodes and maxNodes while
	// it runs, and JobSet adds or removes nodes in place. Gantry's
	// addition, after KEP-2903 (kubeflow/trainer#2903, a draft): Trainer
	// v2.3 has no such field and prunes it. It needs the manager's
	// TrainJobElasticPyTorch feature gate, and JobSet's ElasticJobSet gate
	// for the in-place resize.
	// +optional
	ElasticPolicy *TorchElasticPolicy `json:"elasticPolicy,omitempty"`
}

// TorchElasticPolicy bounds an elastic PyTorch job.
// +kubebuilder:validation:XValidation:rule="self.minNodes <= self.maxNodes",message="minNodes must not be greater than maxNodes"
type TorchElasticPolicy struct {
	// minNodes is the fewest nodes training runs on (torchrun's --nnodes
	// lower bound); a TrainJob's numNodes may not go below it.
	// +kubebuilder:validation:Minimum=1
	// +required
	MinNodes int32 `json:"minNodes"`

	// maxNodes is the most nodes training may grow to (torchrun's --nnodes
	// upper bound); a TrainJob's numNodes may not go above it.
	// +kubebuilder:validation:Minimum=1
	// +required
	MaxNodes int32 `json:"maxNodes"`

	// maxRestarts is how many times torchrun restarts the worker group
	// after a failure before the node fails (torchrun's --max-restarts).
	// Restarts for a node joining or leaving do not count. Unset,
	// torchrun's default (0) holds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`
}

// TorchEnvInjection lists the extra containers that receive PET_* variables.
type TorchEnvInjection struct {
	// +listType=map
	// +listMapKey=jobName
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Targets []TorchEnvInjectionTarget `json:"targets,omitempty"`
}

// TorchEnvInjectionTarget names containers of one replicated job.
type TorchEnvInjectionTarget struct {
	// jobName is the replicated job, e.g. node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	JobName string `json:"jobName"`

	// containerNames are containers or init containers of that job. The
	// node container is not one of them: it always gets the variables.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!self.exists(c, c == 'node')",message="containerNames must not include the main node container because PET_* envs are always injected into it"
	// +required
	ContainerNames []string `json:"containerNames,omitempty"`
}

// JAXMLPolicySource selects the JAX plugin; it has no settings yet.
type JAXMLPolicySource struct{}

// XGBoostMLPolicySource selects the XGBoost plugin. Workers per node follow
// from the trainer's GPU count (one per GPU, else one per node).
type XGBoostMLPolicySource struct{}

// MPIMLPolicySource configures the MPI plugin.
type MPIMLPolicySource struct {
	// numProcPerNode is the slots per node written to the hostfile.
	// +kubebuilder:default=1
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`

	// mpiImplementation decides the hostfile format and launcher environment.
	// +kubebuilder:default=OpenMPI
	// +kubebuilder:validation:Enum=OpenMPI;""
	// +optional
	MPIImplementation *MPIImplementation `json:"mpiImplementation,omitempty"`

	// sshAuthMountPath is where the generated SSH keys are mounted; it must
	// match the home directory of the user the image runs as.
	// +kubebuilder:default=/root/.ssh
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	SSHAuthMountPath *string `json:"sshAuthMountPath,omitempty"`

	// runLauncherAsNode makes the launcher also run a training process,
	// saving a node for small jobs.
	// +kubebuilder:default=false
	// +optional
	RunLauncherAsNode *bool `json:"runLauncherAsNode,omitempty"`
}

// MPIImplementation names an MPI distribution.
type MPIImplementation string

// Only OpenMPI is accepted by the API today; the others are named so code
// can be written against them, as upstream does.
const (
	MPIImplementationOpenMPI MPIImplementation = "OpenMPI"
	MPIImplementationIntel   MPIImplementation = "Intel"
	MPIImplementationMPICH   MPIImplementation = "MPICH"
)

// FluxMLPolicySource configures the Flux plugin.
type FluxMLPolicySource struct {
	// numProcPerNode is the tasks per node.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="NumProcPerNode in fluxPolicy must be >= 1"
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`
}
