package accounting

import (
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

// AnnotationSlurmdbdConfHash carries the hash of slurmdbd.conf on the pod
// template: slurmdbd reads its configuration only at start, so a change
// rolls the pod. Slinky's name.
const AnnotationSlurmdbdConfHash = slinkyv1beta1.SlinkyPrefix + "slurmdbd-conf-hash"

// The builders below are pure: they read the Accounting and their inputs
// and never modify either.

// PodInputs are what the slurmdbd pod depends on besides the Accounting:
// hashes of the contents it mounts, so that a change of any rolls the pod,
// and the default image.
type PodInputs struct {
	ConfHash     string
	SlurmKeyHash string
	JwtKeyHash   string
	Image        string
}

// objectMeta is the metadata of every object made for a: the Accounting's
// own labels, overlaid by the operator's, and a as controlling owner.
func objectMeta(a *slinkyv1beta1.Accounting, name string) metav1.ObjectMeta {
	return builder.NewMetadata(name, a.Namespace).
		WithLabels(a.Labels).
		WithLabels(slinky.AccountingLabels(a)).
		WithOwner(a, slinkyv1beta1.AccountingGVK).
		Build()
}

// BuildService builds the Service slurmctld reaches slurmdbd through: the
// name a Controller's slurm.conf gives as AccountingStorageHost.
func BuildService(a *slinkyv1beta1.Accounting) *corev1.Service {
	return service.New(service.Params{
		Meta:     objectMeta(a, slinky.AccountingName(a.Name)),
		User:     a.Spec.Service,
		Selector: slinky.AccountingSelectorLabels(a),
		PortName: slinky.AppSlurmdbd,
		Port:     slinky.SlurmdbdPort,
	})
}

// BuildConfigSecret builds the Secret holding slurmdbd.conf: a Secret, not
// a ConfigMap, because the file carries the database password.
func BuildConfigSecret(a *slinkyv1beta1.Accounting, conf string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(a, slinky.AccountingName(a.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{SlurmdbdConfFile: []byte(conf)},
	}
}

// BuildStatefulSet builds the slurmdbd StatefulSet: one pod, whose name is
// slurmdbd.conf's DbdHost. slurmdbd keeps no state of its own (the
// database does), so the pod has no volume claim.
func BuildStatefulSet(a *slinkyv1beta1.Accounting, in PodInputs) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: objectMeta(a, slinky.AccountingName(a.Name)),
		Spec: appsv1.StatefulSetSpec{
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Replicas:             ptr.To[int32](1),
			RevisionHistoryLimit: ptr.To[int32](0),
			Selector:             &metav1.LabelSelector{MatchLabels: slinky.AccountingSelectorLabels(a)},
			ServiceName:          slinky.AccountingName(a.Name),
			Template:             podTemplate(a, in),
		},
	}
}

func podTemplate(a *slinkyv1beta1.Accounting, in PodInputs) corev1.PodTemplateSpec {
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: builder.MergeLabels(a.Labels, slinky.AccountingLabels(a)),
			Annotations: map[string]string{
				slinky.AnnotationDefaultContainer: slinky.AppSlurmdbd,
				AnnotationSlurmdbdConfHash:        in.ConfHash,
				slinky.AnnotationSlurmKeyHash:     in.SlurmKeyHash,
				slinky.AnnotationJwtKeyHash:       in.JwtKeyHash,
			},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{slurmdbdContainer(a, in.Image)},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true),
				RunAsUser:    ptr.To(slinky.SlurmUserUID),
				RunAsGroup:   ptr.To(slinky.SlurmUserGID),
				FSGroup:      ptr.To(slinky.SlurmUserGID),
			},
			Volumes: podVolumes(a),
		},
	}
	user := podspec.UserPodTemplate(a.Spec.Template.Metadata.Labels, a.Spec.Template.Metadata.Annotations, a.Spec.Template.Spec.PodSpec)
	return builder.MergePodTemplate(base, user)
}

func slurmdbdContainer(a *slinkyv1beta1.Accounting, image string) corev1.Container {
	base := corev1.Container{
		Name:  slinky.AppSlurmdbd,
		Image: image,
		Ports: []corev1.ContainerPort{{Name: slinky.AppSlurmdbd, ContainerPort: slinky.SlurmdbdPort, Protocol: corev1.ProtocolTCP}},
		// slurmdbd listens only once it has reached the database.
		ReadinessProbe: podspec.Probe(corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(slinky.SlurmdbdPort)},
		}, 3, 10),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true),
			RunAsUser:    ptr.To(slinky.SlurmUserUID),
			RunAsGroup:   ptr.To(slinky.SlurmUserGID),
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: slinky.SlurmEtcVolume, MountPath: slinky.SlurmEtcDir, ReadOnly: true},
			{Name: slinky.SlurmPidFileVolume, MountPath: slinky.SlurmPidFileDir},
		},
	}
	return builder.MergeContainer(base, a.Spec.Slurmdbd.Container)
}

// podVolumes puts slurmdbd.conf and the keys into one projected /etc/slurm,
// readable by SlurmUser alone, as slurmdbd requires of slurmdbd.conf.
func podVolumes(a *slinkyv1beta1.Accounting) []corev1.Volume {
	sources := []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: slinky.AccountingName(a.Name)},
		Items:                []corev1.KeyToPath{{Key: SlurmdbdConfFile, Path: SlurmdbdConfFile}},
	}}}
	if ref := a.Spec.SlurmKeyRef; ref != nil {
		sources = append(sources, podspec.SecretKeyProjection(ref, slinky.SlurmKeyFile))
	}
	if ref := a.Spec.EffectiveJwtKeyRef(); ref != nil {
		sources = append(sources, podspec.SecretKeyProjection(ref, slinky.JwtKeyFile))
	}
	if ref := a.Spec.JwksKeyRef; ref != nil {
		sources = append(sources, podspec.ConfigMapKeyProjection(ref, slinky.JwksKeyFile))
	}
	return []corev1.Volume{
		{Name: slinky.SlurmEtcVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o600),
			Sources:     sources,
		}}},
		podspec.PidFileVolume(),
	}
}
