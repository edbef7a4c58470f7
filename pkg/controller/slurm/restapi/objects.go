package restapi

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/service"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// The builders below are pure: they read their inputs and never modify them.

func objectMeta(r *slinkyv1beta1.RestApi) metav1.ObjectMeta {
	return builder.NewMetadata(slinky.RestApiName(r.Name), r.Namespace).
		WithLabels(r.Labels).
		WithLabels(slinky.RestApiLabels(r)).
		WithOwner(r, slinkyv1beta1.RestApiGVK).
		Build()
}

// BuildService builds the slurmrestd Service (port 6820 unless
// spec.service.port says otherwise).
func BuildService(r *slinkyv1beta1.RestApi) *corev1.Service {
	return service.New(service.Params{
		Meta:     objectMeta(r),
		User:     r.Spec.Service,
		Selector: slinky.RestApiSelectorLabels(r),
		PortName: slinky.AppSlurmrestd,
		Port:     slinky.SlurmrestdPort,
	})
}

// DeploymentInputs are what the slurmrestd pods depend on besides the RestApi.
type DeploymentInputs struct {
	// Controller is the referenced Controller.
	Controller *slinkyv1beta1.Controller
	// SlurmKeyHash is the hash of the Controller's auth/slurm key: slurmrestd
	// reads it at start-up, so a new key must roll the pods.
	SlurmKeyHash string
	// Image is used when the RestApi names no slurmrestd image.
	Image string
}

// BuildDeployment builds the slurmrestd Deployment.
func BuildDeployment(r *slinkyv1beta1.RestApi, in DeploymentInputs) *appsv1.Deployment {
	controller := in.Controller
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: builder.MergeLabels(r.Labels, slinky.RestApiLabels(r)),
			Annotations: map[string]string{
				slinky.AnnotationDefaultContainer: slinky.AppSlurmrestd,
				slinky.AnnotationSlurmKeyHash:     in.SlurmKeyHash,
			},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{slurmrestdContainer(r, controller, in.Image)},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true),
				RunAsUser:    ptr.To(slinky.SlurmrestdUserUID),
				RunAsGroup:   ptr.To(slinky.SlurmrestdUserGID),
				FSGroup:      ptr.To(slinky.SlurmrestdUserGID),
			},
			Volumes: []corev1.Volume{etcVolume(controller)},
		},
	}
	user := podspec.UserPodTemplate(r.Spec.Template.Metadata.Labels, r.Spec.Template.Metadata.Annotations, r.Spec.Template.Spec.PodSpec)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(r),
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To(ptr.Deref(r.Spec.Replicas, 1)),
			RevisionHistoryLimit: ptr.To[int32](0),
			Selector:             &metav1.LabelSelector{MatchLabels: slinky.RestApiSelectorLabels(r)},
			Template:             builder.MergePodTemplate(base, user),
		},
	}
}

// slurmrestd authenticates every request with the JWT it carries
// (rest_auth/jwt) and, with SLURM_JWT=daemon, talks to slurmctld as itself.
// Without an accounting database only the slurmctld plugin is loaded, since
// the slurmdbd one would fail every call.
func slurmrestdContainer(r *slinkyv1beta1.RestApi, controller *slinkyv1beta1.Controller, image string) corev1.Container {
	args := []string{"-a", "rest_auth/jwt"}
	if controller.Spec.AccountingRef == nil {
		args = append(args, "-s", "openapi/slurmctld")
	}
	probe := func() corev1.ProbeHandler {
		return corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(slinky.SlurmrestdPort)}}
	}
	base := corev1.Container{
		Name:  slinky.AppSlurmrestd,
		Image: image,
		Env: []corev1.EnvVar{
			{Name: "SLURM_JWT", Value: "daemon"},
			// Unsharing needs privileges the pod does not have.
			{Name: "SLURMRESTD_SECURITY", Value: "disable_unshare_files,disable_unshare_sysv"},
		},
		Args:           args,
		Ports:          []corev1.ContainerPort{{Name: slinky.AppSlurmrestd, ContainerPort: slinky.SlurmrestdPort, Protocol: corev1.ProtocolTCP}},
		StartupProbe:   podspec.Probe(probe(), 6, 10),
		LivenessProbe:  podspec.Probe(probe(), 6, 10),
		ReadinessProbe: podspec.Probe(probe(), 3, 10),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true),
			RunAsUser:    ptr.To(slinky.SlurmrestdUserUID),
			RunAsGroup:   ptr.To(slinky.SlurmrestdUserGID),
		},
		VolumeMounts: []corev1.VolumeMount{{Name: slinky.SlurmEtcVolume, MountPath: slinky.SlurmEtcDir, ReadOnly: true}},
	}
	out := builder.MergeContainer(base, r.Spec.Slurmrestd.Container)
	// The listen address comes last (slurmrestd [options] [host:port]) and
	// stays even when the user replaces the arguments.
	out.Args = append(out.Args, fmt.Sprintf("0.0.0.0:%d", slinky.SlurmrestdPort))
	return out
}

// etcVolume holds slurm.conf from the Controller's ConfigMap and the
// auth/slurm key; slurmrestd needs nothing else in /etc/slurm.
func etcVolume(controller *slinkyv1beta1.Controller) corev1.Volume {
	sources := []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: slinky.ControllerConfigMapName(controller.Name)},
		Items:                []corev1.KeyToPath{{Key: slinky.SlurmConfFile, Path: slinky.SlurmConfFile}},
	}}}
	if ref := controller.Spec.SlurmKeyRef; ref != nil {
		sources = append(sources, podspec.SecretKeyProjection(ref, slinky.SlurmKeyFile))
	}
	return corev1.Volume{Name: slinky.SlurmEtcVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o600),
		Sources:     sources,
	}}}
}
