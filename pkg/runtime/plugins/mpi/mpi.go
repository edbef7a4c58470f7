package mpi

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "MPI"

// Keys and files of the SSH Secret; the file names are what OpenSSH looks for.
const (
	SSHPublicKey        = "ssh-publickey"
	SSHPrivateKeyFile   = "id_rsa"
	SSHPublicKeyFile    = SSHPrivateKeyFile + ".pub"
	SSHAuthorizedKeys   = "authorized_keys"
	DefaultSSHMountPath = "/root/.ssh"
	// The SSH Secret's modes are Trainer v2.3's: items without their own
	// mode are owner read-only; the private key is owner rw, group r; the
	// public key and authorized_keys are world-readable.
	sshAuthDefaultMode  = int32(0o400)
	sshPrivateKeyMode   = int32(0o640)
	sshPublicKeyMode    = int32(0o644)
	hostfileDefaultMode = int32(0o444)
	defaultSlotsPerNode = int32(1)
)

// OpenMPI environment set on the launcher.
const (
	OpenMPIEnvHostFileLocation    = "OMPI_MCA_orte_default_hostfile"
	OpenMPIEnvKeepFQDNHostNames   = "OMPI_MCA_orte_keep_fqdn_hostnames"
	OpenMPIEnvDefaultSlots        = "OMPI_MCA_orte_set_default_slots"
	OpenMPIEnvKeyRSHArgs          = "OMPI_MCA_plm_rsh_args"
	OpenMPIEnvDefaultValueRSHArgs = "-o ConnectionAttempts=10"
)

// SSHAuthSecretName is the Secret holding the job's SSH key pair.
func SSHAuthSecretName(trainJobName string) string {
	return trainJobName + trainer.MPISSHAuthSecretSuffix
}

// HostfileConfigMapName is the ConfigMap holding the job's hostfile.
func HostfileConfigMapName(trainJobName string) string {
	return trainJobName + trainer.MPIHostfileConfigMapSuffix
}

// MPI implements validation, ML policy and component building.
type MPI struct{}

var (
	_ plugin.EnforceMLPolicyPlugin  = MPI{}
	_ plugin.CustomValidationPlugin = MPI{}
	_ plugin.ComponentBuilderPlugin = MPI{}
)

// Name implements plugin.Plugin.
func (MPI) Name() string { return Name }

func active(info *plugin.Info) bool {
	return info != nil && info.MPIPolicy() != nil
}

func runLauncherAsNode(p *trainer.MPIMLPolicySource) bool {
	return ptr.Deref(p.RunLauncherAsNode, false)
}

// Validate checks the runtime has the jobs MPI needs and that the TrainJob
// sets none of the OpenMPI variables the plugin writes (validate.go).
// Implementations other than OpenMPI are rejected before plugins run
// (pkg/runtime), as unsupported.
func (MPI) Validate(info *plugin.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !active(info) {
		return nil
	}
	var errs field.ErrorList
	policy := info.MPIPolicy()
	hasLauncher := info.FindPodSetByName(trainer.LauncherName) != nil
	hasNode := info.FindPodSetByName(trainer.TrainerNodeName) != nil
	if t := newJob.Spec.Trainer; t != nil && ptr.Deref(t.NumNodes, 1) >= 2 && runLauncherAsNode(policy) && (!hasLauncher || !hasNode) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "numNodes"), *t.NumNodes,
			"must be 1 when the MPI runtime runs the launcher as a node but lacks either the launcher or the node job"))
	}
	if !hasLauncher && !hasNode {
		errs = append(errs, field.Invalid(field.NewPath("spec", "runtimeRef"), newJob.Spec.RuntimeRef,
			fmt.Sprintf("an MPI runtime needs a %q or a %q replicated job", trainer.LauncherName, trainer.TrainerNodeName)))
	}
	return append(errs, validateReservedEnv(newJob)...)
}

// EnforceMLPolicy sets the node count (one node fewer when the launcher
// runs as a node), resolves the slots per node, mounts the SSH keys on the
// launcher and nodes and the hostfile on the launcher, and gives the
// launcher the OpenMPI environment.
func (MPI) EnforceMLPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) {
		return nil
	}
	policy := info.MPIPolicy()
	if impl := ptr.Deref(policy.MPIImplementation, trainer.MPIImplementationOpenMPI); impl != trainer.MPIImplementationOpenMPI && impl != "" {
		return fmt.Errorf("MPI implementation %q: %w", impl, plugin.ErrUnsupportedPolicy)
	}

	numNodes := plugin.TrainerNumNodes(info, trainJob)
	if node := info.FindPodSetByName(trainer.TrainerNodeName); node != nil {
		if runLauncherAsNode(policy) {
			node.Count = max(numNodes-1, 1)
		} else {
			node.Count = numNodes
		}
	}
	// A job has one launcher, whatever numNodes says.
	launcher := info.FindPodSetByName(trainer.LauncherName)
	if launcher != nil {
		launcher.Count = 1
	}

	policy.NumProcPerNode = ptr.To(slotsPerNode(policy, trainJob, info))
	mountPath := ptr.Deref(policy.SSHAuthMountPath, DefaultSSHMountPath)

	for i := range info.PodSets {
		ps := &info.PodSets[i]
		if ps.Name != trainer.TrainerNodeName && ps.Name != trainer.LauncherName {
			continue
		}
		plugin.UpsertVolumes(&ps.Volumes, sshAuthVolume(trainJob.Name))
		if ps.Name == trainer.LauncherName {
			plugin.UpsertVolumes(&ps.Volumes, hostfileVolume(trainJob.Name))
		}
		for j := range ps.Containers {
			c := &ps.Containers[j]
			isLauncherContainer := ps.Name == trainer.LauncherName && (c.Name == trainer.TrainerNodeName || c.Name == trainer.LauncherName)
			if c.Name != trainer.TrainerNodeName && !isLauncherContainer {
				continue
			}
			plugin.UpsertVolumeMounts(&c.VolumeMounts, corev1.VolumeMount{Name: trainer.MPISSHAuthVolumeName, MountPath: mountPath})
			if isLauncherContainer {
				plugin.UpsertVolumeMounts(&c.VolumeMounts, corev1.VolumeMount{Name: trainer.MPIHostfileVolumeName, MountPath: trainer.MPIHostfileDir})
				plugin.UpsertEnv(&c.Env,
					corev1.EnvVar{Name: OpenMPIEnvHostFileLocation, Value: trainer.MPIHostfileDir + "/" + trainer.MPIHostfileName},
					corev1.EnvVar{Name: OpenMPIEnvKeepFQDNHostNames, Value: "true"},
					corev1.EnvVar{Name: OpenMPIEnvDefaultSlots, Value: strconv.Itoa(int(*policy.NumProcPerNode))},
					corev1.EnvVar{Name: OpenMPIEnvKeyRSHArgs, Value: OpenMPIEnvDefaultValueRSHArgs},
				)
			}
		}
	}
	return nil
}

// slotsPerNode is the TrainJob's numProcPerNode, else the runtime's; a
// runtime value of 1 (the default) becomes the GPU count of a multi-GPU
// node, since one rank per GPU is what MPI jobs on GPUs want.
func slotsPerNode(policy *trainer.MPIMLPolicySource, trainJob *trainer.TrainJob, info *plugin.Info) int32 {
	if t := trainJob.Spec.Trainer; t != nil && t.NumProcPerNode != nil {
		return max(1, *t.NumProcPerNode)
	}
	slots := max(1, ptr.Deref(policy.NumProcPerNode, defaultSlotsPerNode))
	if slots == 1 {
		if gpus := plugin.GPUCount(plugin.ResourcesPerNode(info, trainJob)); gpus > 1 {
			slots = int32(gpus)
		}
	}
	return slots
}

func sshAuthVolume(trainJobName string) corev1.Volume {
	return corev1.Volume{
		Name: trainer.MPISSHAuthVolumeName,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  SSHAuthSecretName(trainJobName),
			DefaultMode: ptr.To(sshAuthDefaultMode),
			Items: []corev1.KeyToPath{
				{Key: corev1.SSHAuthPrivateKey, Path: SSHPrivateKeyFile, Mode: ptr.To(sshPrivateKeyMode)},
				{Key: SSHPublicKey, Path: SSHPublicKeyFile, Mode: ptr.To(sshPublicKeyMode)},
				{Key: SSHPublicKey, Path: SSHAuthorizedKeys, Mode: ptr.To(sshPublicKeyMode)},
			},
		}},
	}
}

func hostfileVolume(trainJobName string) corev1.Volume {
	return corev1.Volume{
		Name: trainer.MPIHostfileVolumeName,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: HostfileConfigMapName(trainJobName)},
			Items:                []corev1.KeyToPath{{Key: trainer.MPIHostfileName, Path: trainer.MPIHostfileName, Mode: ptr.To(hostfileDefaultMode)}},
		}},
	}
}
