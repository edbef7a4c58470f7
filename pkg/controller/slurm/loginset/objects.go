package loginset

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/service"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/sshd"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// The builders below are pure: they read their inputs and never modify them.

// Values of app.kubernetes.io/name and component on a LoginSet's objects
// (Slinky's), and the login container's (and port's) name.
const (
	AppLogin       = "login"
	ComponentLogin = "login"
)

// Pod template annotations carrying the hashes of what sshd, sssd and
// sackd read at start-up (Slinky's names, plus the slurm key's): a change
// rolls the login pods. The first two are package sshd's, which
// ssh-enabled NodeSets' pods carry too.
const (
	AnnotationSshdConfHash    = sshd.AnnotationConfHash
	AnnotationSssdConfHash    = sshd.AnnotationSssdConfHash
	AnnotationSshHostKeysHash = slinkyv1beta1.SlinkyPrefix + "ssh-host-keys-hash"
)

// Volumes and paths of the login pod, as Slinky's login image expects them.
const (
	sackdVolume     = "sackd-dir"
	sackdDir        = "/run/slurm"
	sackdSocketPath = sackdDir + "/sack.socket"

	// slurmConfigVolume holds the key as projected; initconf copies it into
	// the slurm-etc memory volume, which the login container sees as
	// /etc/slurm.
	slurmConfigVolume   = "slurm-config"
	slurmConfigMountDir = "/mnt/slurm"
	slurmEtcMountDir    = "/mnt/etc/slurm"

	sshDir            = "/etc/ssh"
	sshHostKeysVolume = "ssh-host-keys"

	rootAuthorizedKeysPath = "/root/.ssh/" + AuthorizedKeysFile

	initconfContainer = "initconf"
)

// Default images, used when the LoginSet names none: the login image of
// the same Slinky release as Gantry's other Slurm images, and for initconf
// any image with a POSIX shell (Slinky's chart uses Alpine).
const (
	DefaultLoginImage    = "ghcr.io/slinkyproject/login:25.11-ubuntu24.04"
	DefaultInitconfImage = "docker.io/library/alpine:latest"
)

// Images are the defaults of the login and initconf containers.
type Images struct {
	Login    string
	Initconf string
}

// DefaultImages are the images Slinky's chart installs.
func DefaultImages() Images {
	return Images{Login: DefaultLoginImage, Initconf: DefaultInitconfImage}
}

// Or returns i with every empty field taken from fallback.
func (i Images) Or(fallback Images) Images {
	if i.Login == "" {
		i.Login = fallback.Login
	}
	if i.Initconf == "" {
		i.Initconf = fallback.Initconf
	}
	return i
}

// Object names: the Deployment and Service take the LoginSet's name, the
// ConfigMap and host keys Secret Slinky's suffixes.

// DeploymentName names the login Deployment.
func DeploymentName(l *slinkyv1beta1.LoginSet) string { return l.Name }

// ServiceName names the Service users ssh to.
func ServiceName(l *slinkyv1beta1.LoginSet) string { return l.Name }

// SshConfigName names the ConfigMap holding sshd_config and authorized_keys.
func SshConfigName(l *slinkyv1beta1.LoginSet) string { return l.Name + "-ssh-config" }

// HostKeysSecretName names the Secret holding the SSH host keys.
func HostKeysSecretName(l *slinkyv1beta1.LoginSet) string { return l.Name + "-ssh-host-keys" }

// SelectorLabels select the login pods of l.
func SelectorLabels(l *slinkyv1beta1.LoginSet) map[string]string {
	return builder.SelectorLabels(AppLogin, l.Name, "")
}

// Selector is SelectorLabels as the status (and scale subresource) shows it.
func Selector(l *slinkyv1beta1.LoginSet) string {
	return labels.SelectorFromSet(SelectorLabels(l)).String()
}

// Labels are carried by every object made for l: Slinky's, plus
// managed-by, which puts them in the manager's label-filtered caches.
func Labels(l *slinkyv1beta1.LoginSet) map[string]string {
	out := builder.SelectorLabels(AppLogin, l.Name, ComponentLogin)
	out[builder.LabelManagedBy] = builder.ManagedByGantry
	return out
}

func objectMeta(l *slinkyv1beta1.LoginSet, name string) metav1.ObjectMeta {
	return builder.NewMetadata(name, l.Namespace).
		WithLabels(l.Labels).
		WithLabels(Labels(l)).
		WithOwner(l, slinkyv1beta1.LoginSetGVK).
		Build()
}

// BuildSshConfig builds the ConfigMap with sshd_config and root's
// authorized_keys.
func BuildSshConfig(l *slinkyv1beta1.LoginSet) *corev1.ConfigMap {
	cm := builder.ConfigMap(objectMeta(l, SshConfigName(l)), map[string]string{
		sshd.ConfigFile:    BuildSshdConfig(l.Spec.ExtraSshdConfig, loginPort(l)),
		AuthorizedKeysFile: BuildAuthorizedKeys(l.Spec.RootSshAuthorizedKeys),
	})
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	return cm
}

// BuildHostKeysSecret builds the immutable Secret of freshly generated SSH
// host keys. It is created once: the keys are the login nodes' identity
// in users' known_hosts, so they never change while the Secret exists.
func BuildHostKeysSecret(l *slinkyv1beta1.LoginSet) (*corev1.Secret, error) {
	keys, err := GenerateHostKeys("root@" + l.Name)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(l, HostKeysSecretName(l)),
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr.To(true),
		Data:       keys,
	}, nil
}

// BuildService builds the ssh Service (port 22 unless spec.service.port
// says otherwise), targeting the login container's "login" port.
func BuildService(l *slinkyv1beta1.LoginSet) *corev1.Service {
	return service.New(service.Params{
		Meta:     objectMeta(l, ServiceName(l)),
		User:     l.Spec.Service,
		Selector: SelectorLabels(l),
		PortName: AppLogin,
		Port:     sshd.DefaultPort,
	})
}

// DeploymentInputs are what the login pods depend on besides the LoginSet.
type DeploymentInputs struct {
	// Controller is the referenced Controller.
	Controller *slinkyv1beta1.Controller
	// Hashes of what the pod's daemons read at start-up; each is a pod
	// template annotation, so a change rolls the pods.
	SlurmKeyHash, SshdConfHash, SssdConfHash, HostKeysHash string
	// Images fill in the containers' images the LoginSet leaves empty.
	Images Images
}

// BuildDeployment builds the login Deployment.
func BuildDeployment(l *slinkyv1beta1.LoginSet, in DeploymentInputs) *appsv1.Deployment {
	controller := in.Controller
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: builder.MergeLabels(l.Labels, Labels(l)),
			Annotations: map[string]string{
				slinky.AnnotationDefaultContainer: AppLogin,
				slinky.AnnotationSlurmKeyHash:     in.SlurmKeyHash,
				AnnotationSshdConfHash:            in.SshdConfHash,
				AnnotationSssdConfHash:            in.SssdConfHash,
				AnnotationSshHostKeysHash:         in.HostKeysHash,
			},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			InitContainers:               []corev1.Container{initconf(l, in.Images.Initconf)},
			Containers:                   []corev1.Container{loginContainer(l, controller, in.Images.Login)},
			// Users reach the slurmd pods by their short host names, as
			// Slurm names the nodes.
			DNSConfig: &corev1.PodDNSConfig{Searches: []string{
				slinky.ServiceFQDN(workerServiceName(l.Spec.ControllerRef.Name), l.Namespace),
			}},
			Volumes: volumes(l, controller),
		},
	}
	user := podspec.UserPodTemplate(l.Spec.Template.Metadata.Labels, l.Spec.Template.Metadata.Annotations, l.Spec.Template.Spec.PodSpec)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(l, DeploymentName(l)),
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To(l.ReplicasOrDefault()),
			RevisionHistoryLimit: ptr.To[int32](0),
			Strategy:             *l.Spec.Strategy.DeepCopy(),
			Selector:             &metav1.LabelSelector{MatchLabels: SelectorLabels(l)},
			Template:             builder.MergePodTemplate(base, user),
		},
	}
}

// workerServiceName is the headless Service of a Controller's slurmd pods
// (nodeset.WorkerServiceName; Slinky's slurm-workers-<controller>). Not
// imported: the login pods need only its name, not the NodeSet machinery.
func workerServiceName(controller string) string { return "slurm-workers-" + controller }

// loginPort is the port sshd listens on: the login container's port named
// "login" when the user sets one (hostNetwork pods), else 22.
func loginPort(l *slinkyv1beta1.LoginSet) int32 {
	for _, p := range l.Spec.Login.Ports {
		if p.Name == AppLogin && p.ContainerPort != 0 {
			return p.ContainerPort
		}
	}
	return sshd.DefaultPort
}

// loginContainer runs the login image: sshd, sssd and sackd under
// supervisord. sackd fetches slurm.conf from slurmctld (configless) with
// the options in SACKD_OPTIONS and is ready once its socket exists.
func loginContainer(l *slinkyv1beta1.LoginSet, controller *slinkyv1beta1.Controller, image string) corev1.Container {
	mounts := []corev1.VolumeMount{
		{Name: slinky.SlurmEtcVolume, MountPath: slinky.SlurmEtcDir, ReadOnly: true},
		{Name: sackdVolume, MountPath: sackdDir},
	}
	for _, f := range HostKeyFiles {
		mounts = append(mounts, corev1.VolumeMount{Name: sshHostKeysVolume, MountPath: sshDir + "/" + f, SubPath: f, ReadOnly: true})
	}
	mounts = append(mounts,
		sshd.ConfigMount(),
		corev1.VolumeMount{Name: sshd.ConfigVolume, MountPath: rootAuthorizedKeysPath, SubPath: AuthorizedKeysFile, ReadOnly: true},
		sshd.SssdConfMount(),
	)
	base := corev1.Container{
		Name:  AppLogin,
		Image: image,
		Env:   []corev1.EnvVar{{Name: "SACKD_OPTIONS", Value: strings.Join(slinky.ConfServerArgs(controller), " ")}},
		Ports: []corev1.ContainerPort{{Name: AppLogin, ContainerPort: sshd.DefaultPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: podspec.Probe(corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{"test", "-S", sackdSocketPath},
		}}, 3, 10),
		VolumeMounts: mounts,
	}
	return builder.MergeContainer(base, l.Spec.Login.Container)
}

// initconf copies the auth/slurm key where sackd can read it (see
// initconfScript).
func initconf(l *slinkyv1beta1.LoginSet, image string) corev1.Container {
	base := corev1.Container{
		Name:    initconfContainer,
		Image:   image,
		Command: []string{"sh", "-c", initconfScript},
		Env: []corev1.EnvVar{
			{Name: "SLURM_USER_UID", Value: fmt.Sprint(slinky.SlurmUserUID)},
			{Name: "SLURM_USER_GID", Value: fmt.Sprint(slinky.SlurmUserGID)},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: slinky.SlurmEtcVolume, MountPath: slurmEtcMountDir},
			{Name: slurmConfigVolume, MountPath: slurmConfigMountDir, ReadOnly: true},
		},
	}
	return builder.MergeContainer(base, l.Spec.InitConf.Container)
}

func volumes(l *slinkyv1beta1.LoginSet, controller *slinkyv1beta1.Controller) []corev1.Volume {
	var keySources []corev1.VolumeProjection
	if ref := controller.Spec.SlurmKeyRef; ref != nil {
		keySources = append(keySources, podspec.SecretKeyProjection(ref, slinky.SlurmKeyFile))
	}
	hostKeyItems := make([]corev1.KeyToPath, 0, len(HostKeyFiles))
	for _, f := range HostKeyFiles {
		mode := int32(0o644)
		if isPrivateHostKey(f) {
			mode = 0o600
		}
		hostKeyItems = append(hostKeyItems, corev1.KeyToPath{Key: f, Path: f, Mode: ptr.To(mode)})
	}
	projected := func(name string, sources ...corev1.VolumeProjection) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o600),
			Sources:     sources,
		}}}
	}
	memory := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}
	}
	return []corev1.Volume{
		memory(slinky.SlurmEtcVolume),
		memory(sackdVolume),
		projected(slurmConfigVolume, keySources...),
		projected(sshHostKeysVolume, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: HostKeysSecretName(l)},
			Items:                hostKeyItems,
		}}),
		sshd.ConfigVolumeFrom(SshConfigName(l), AuthorizedKeysFile),
		sshd.SssdConfVolumeFrom(l.Spec.SssdConfRef),
	}
}
