package flux

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "Flux"

// Names, paths and defaults, as Trainer v2.3 has them (its pkg/constants
// and Flux plugin), so that pods, volumes and objects look the same.
const (
	// InstallerContainerName is the init container that installs Flux; a
	// runtime may not have an init container of that name.
	InstallerContainerName = "flux-installer"
	// DefaultViewImage is the Flux view the installer runs: its operating
	// system and version must match the trainer image's.
	DefaultViewImage = "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
	// DefaultNetworkDevice is the interface the brokers' overlay binds to.
	DefaultNetworkDevice = "eth0"
	// DefaultQueuePolicy is the Fluxion scheduler's queue policy.
	DefaultQueuePolicy = "fcfs"

	// InstallVolumeName (an emptyDir at InstallMountPath) is shared by the
	// installer and the trainer: Flux, its configuration and state.
	InstallVolumeName = "flux-install"
	InstallMountPath  = "/mnt/flux"
	// ConfigMountPath is where the ConfigMap (a volume named after it) is
	// mounted read-only, in the installer and the trainer.
	ConfigMountPath = "/etc/flux-config"
	// CurveVolumeName is the Secret's volume, mounted read-only.
	CurveVolumeName = "flux-curve"
	CurveMountPath  = "/curve"
	// MemoryVolumeName is a memory-backed emptyDir over /dev/shm.
	MemoryVolumeName = "shared-memory"
	MemoryMountPath  = "/dev/shm"
	// SoftwareVolumeName receives the view's spack software tree, which the
	// view's links point into.
	SoftwareVolumeName = "spack-install"
	SoftwareMountPath  = "/opt/software"

	// Keys of the ConfigMap and the Secret.
	InitScriptKey       = "init.sh"
	EntrypointScriptKey = "entrypoint.sh"
	BrokerConfigKey     = "broker.toml"
	CurveCertKey        = "curve.cert"

	// Trainer env variables that choose the settings, read from the
	// runtime's trainer container and then the TrainJob's spec.trainer.env.
	EnvViewImage     = "FLUX_VIEW_IMAGE"
	EnvNetworkDevice = "FLUX_NETWORK_DEVICE"
	EnvQueuePolicy   = "FLUX_QUEUE_POLICY"

	configMapMode = int32(0o755)
	curveMode     = int32(0o400)
)

// ConfigMapName is the ConfigMap holding the scripts and broker configuration.
func ConfigMapName(trainJobName string) string { return trainJobName + "-flux-entrypoint" }

// CurveSecretName is the Secret holding the CURVE certificate.
func CurveSecretName(trainJobName string) string { return trainJobName + "-flux-curve" }

// Flux implements validation, ML policy and component building.
type Flux struct {
	// ClusterDomain is the cluster DNS suffix in the brokers' connect
	// address; empty means cluster.local, which Trainer v2.3 always uses.
	ClusterDomain string
}

var (
	_ plugin.CustomValidationPlugin = Flux{}
	_ plugin.EnforceMLPolicyPlugin  = Flux{}
	_ plugin.ComponentBuilderPlugin = Flux{}
)

// Name implements plugin.Plugin.
func (Flux) Name() string { return Name }

func active(info *plugin.Info) bool {
	return info != nil && info.MLPolicy != nil && info.MLPolicy.Flux != nil
}

// Validate applies Trainer v2.3's rules: at least one process per node
// (the TrainJob's numProcPerNode, else the runtime's), and no init
// container named flux-installer in the trainer step, where the plugin
// adds its own.
func (Flux) Validate(info *plugin.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !active(info) || newJob == nil {
		return nil
	}
	var errs field.ErrorList
	procs := info.MLPolicy.Flux.NumProcPerNode
	if t := newJob.Spec.Trainer; t != nil && t.NumProcPerNode != nil {
		procs = t.NumProcPerNode
	}
	if procs != nil && *procs < 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "numProcPerNode"), *procs,
			"must be greater than or equal to 1 for Flux TrainJob"))
	}
	if ps := info.TrainerPodSet(); ps != nil && ps.FindInitContainer(InstallerContainerName) != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "runtimeRef"), newJob.Spec.RuntimeRef,
			fmt.Sprintf("the trainer step's init container %q is reserved for the Flux policy, which adds its own", InstallerContainerName)))
	}
	return errs
}

// EnforceMLPolicy sets the trainer's pod count and env (the TrainJob's
// numNodes and env, as for plain runtimes), adds the installer init
// container, the volumes and the trainer's mounts, and replaces the
// trainer's command with the entrypoint, which gets the original command
// line (spec.trainer.command, else the runtime's, then spec.trainer.args)
// as its one argument.
func (Flux) EnforceMLPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) {
		return nil
	}
	plugin.ApplyTrainerCountAndEnv(info, trainJob)
	ps, node, err := info.TrainerNode("flux")
	if err != nil {
		return err
	}
	line, err := CommandLine(originalCommand(info, trainJob))
	if err != nil {
		return plugin.NewBuildError("the flux policy cannot pass the trainer's command to its entrypoint: %v", err)
	}
	info.TrainerCommand = []string{"/bin/bash", ConfigMountPath + "/" + EntrypointScriptKey, line}
	info.TrainerArgsInCommand = true

	cmName := ConfigMapName(trainJob.Name)
	plugin.UpsertVolumes(&ps.Volumes,
		emptyDirVolume(SoftwareVolumeName, ""),
		emptyDirVolume(InstallVolumeName, ""),
		corev1.Volume{Name: cmName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cmName},
			DefaultMode:          ptr.To(configMapMode),
		}}},
		emptyDirVolume(MemoryVolumeName, corev1.StorageMediumMemory),
		corev1.Volume{Name: CurveVolumeName, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  CurveSecretName(trainJob.Name),
			DefaultMode: ptr.To(curveMode),
		}}},
	)
	// /dev/shm is read-only, as Trainer v2.3 mounts it.
	plugin.UpsertVolumeMounts(&node.VolumeMounts,
		corev1.VolumeMount{Name: InstallVolumeName, MountPath: InstallMountPath},
		corev1.VolumeMount{Name: SoftwareVolumeName, MountPath: SoftwareMountPath},
		corev1.VolumeMount{Name: cmName, MountPath: ConfigMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: CurveVolumeName, MountPath: CurveMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: MemoryVolumeName, MountPath: MemoryMountPath, ReadOnly: true},
	)
	ps.ExtraInitContainers = append(ps.ExtraInitContainers, corev1.Container{
		Name:    InstallerContainerName,
		Image:   SettingsFor(info, trainJob).ViewImage,
		Command: []string{"/bin/bash", ConfigMountPath + "/" + InitScriptKey},
		VolumeMounts: []corev1.VolumeMount{
			{Name: InstallVolumeName, MountPath: InstallMountPath},
			{Name: cmName, MountPath: ConfigMountPath, ReadOnly: true},
		},
	})
	return nil
}

func emptyDirVolume(name string, medium corev1.StorageMedium) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}
}

// originalCommand is the command line the trainer would have run, as
// Trainer v2.3 takes it: spec.trainer.command, else the runtime's node
// container command, followed by spec.trainer.args. The runtime's args
// stay on the container, after the entrypoint's argument.
func originalCommand(info *plugin.Info, trainJob *trainer.TrainJob) []string {
	var command, args []string
	if c := trainerTemplateContainer(info); c != nil {
		command = c.Command
	}
	if t := trainJob.Spec.Trainer; t != nil {
		if t.Command != nil {
			command = t.Command
		}
		args = t.Args
	}
	return append(append([]string(nil), command...), args...)
}

// trainerTemplateContainer is the trainer step's node container in the
// runtime's template (after runtime patches), before any plugin ran, or nil.
func trainerTemplateContainer(info *plugin.Info) *corev1.Container {
	for i := range info.PodSets {
		if info.PodSets[i].Ancestor != trainer.AncestorTrainer {
			continue
		}
		containers := info.Template.ReplicatedJobs[i].Template.Spec.Template.Spec.Containers
		for j := range containers {
			if containers[j].Name == trainer.TrainerNodeName {
				return &containers[j]
			}
		}
		return nil
	}
	return nil
}

// Build returns the CURVE Secret, only when it does not exist yet and
// marked create-only, and the ConfigMap, which follows the TrainJob (node
// count, processes, GPUs, settings).
func (f Flux) Build(ctx context.Context, existing client.Reader, info *plugin.Info, trainJob *trainer.TrainJob) ([]plugin.Component, error) {
	if !active(info) {
		return nil, nil
	}
	var out []plugin.Component
	secretKey := client.ObjectKey{Namespace: trainJob.Namespace, Name: CurveSecretName(trainJob.Name)}
	// Existence is all that matters: a metadata-only read keeps Secret
	// contents out of the manager's cache.
	err := existing.Get(ctx, secretKey, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}})
	switch {
	case apierrors.IsNotFound(err):
		secret, err := newCurveSecret(trainJob)
		if err != nil {
			return nil, fmt.Errorf("generating the Flux CURVE certificate: %w", err)
		}
		out = append(out, plugin.Component{Object: secret, CreateOnly: true})
	case err != nil:
		return nil, fmt.Errorf("looking up Secret %s: %w", secretKey, err)
	}
	cm, err := newConfigMap(info, trainJob, f.ClusterDomain)
	if err != nil {
		return nil, err
	}
	return append(out, plugin.Component{Object: cm}), nil
}

// newCurveSecret is the immutable Secret with a fresh CURVE certificate.
func newCurveSecret(trainJob *trainer.TrainJob) (*corev1.Secret, error) {
	cert, err := NewCurveCertificate(trainJob.Name)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: plugin.OwnedObjectMeta(CurveSecretName(trainJob.Name), trainJob, nil),
		Immutable:  ptr.To(true),
		Data:       map[string][]byte{CurveCertKey: []byte(cert)},
	}, nil
}

// newConfigMap renders the scripts and the broker configuration.
func newConfigMap(info *plugin.Info, trainJob *trainer.TrainJob, clusterDomain string) (*corev1.ConfigMap, error) {
	ps, _, err := info.TrainerNode("flux")
	if err != nil {
		return nil, err
	}
	inst := instanceFor(info, ps, trainJob)
	inst.clusterDomain = plugin.ClusterDomain(clusterDomain)
	broker, err := inst.brokerConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering the Flux broker configuration: %w", err)
	}
	initScript, err := inst.initScript()
	if err != nil {
		return nil, plugin.NewBuildError("rendering the Flux init script: %v", err)
	}
	entrypoint, err := inst.entrypointScript()
	if err != nil {
		return nil, plugin.NewBuildError("rendering the Flux entrypoint: %v", err)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: plugin.OwnedObjectMeta(ConfigMapName(trainJob.Name), trainJob, nil),
		Data: map[string]string{
			InitScriptKey:       initScript,
			EntrypointScriptKey: entrypoint,
			BrokerConfigKey:     broker,
		},
	}, nil
}
