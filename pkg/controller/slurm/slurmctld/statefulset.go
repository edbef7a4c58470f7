package slurmctld

import (
	_ "embed"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// DefaultStateSaveStorage sizes the state claim when the user's persistence
// spec names no size, so a Controller with only the defaults is valid.
var DefaultStateSaveStorage = resource.MustParse("4Gi")

// PodInputs are what the slurmctld pod depends on besides the Controller.
// The hashes cover contents the pod mounts but does not embed; each is an
// annotation on the pod template, so a change of a key rolls the pod
// (slurmctld reads keys only at start-up), and so does a change of
// slurm.conf unless the Controller reconfigures in place.
type PodInputs struct {
	ConfigHash   string
	SlurmKeyHash string
	JwtKeyHash   string
	// Images are the defaults for containers whose image the CR leaves empty.
	Images slinky.Images
}

// BuildStatefulSet builds the slurmctld StatefulSet.
func BuildStatefulSet(c *slinkyv1beta1.Controller, in PodInputs) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: objectMeta(c, slinky.ControllerStatefulSetName(c.Name)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(slinky.ControllerReplicas(c)),
			RevisionHistoryLimit: ptr.To[int32](0),
			Selector:             &metav1.LabelSelector{MatchLabels: slinky.ControllerSelectorLabels(c)},
			ServiceName:          slinky.ControllerInternalServiceName(c.Name),
			// As Slinky's: with OrderedReady a rollout would wait for a
			// broken pod to become Ready. Immutable: a StatefulSet made
			// before keeps its own (apply's keepImmutable).
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            podTemplate(c, in),
		},
	}

	persistence := c.Spec.Persistence
	switch {
	case persistence.IsEnabled() && persistence.ExistingClaim != "":
		sts.Spec.Template.Spec.Volumes = append(sts.Spec.Template.Spec.Volumes, corev1.Volume{
			Name: slinky.SlurmctldStateSaveVolume,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: persistence.ExistingClaim,
			}},
		})
	case persistence.IsEnabled():
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{stateSaveClaim(c)}
	default:
		sts.Spec.Template.Spec.Volumes = append(sts.Spec.Template.Spec.Volumes, corev1.Volume{
			Name:         slinky.SlurmctldStateSaveVolume,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		})
	}
	return sts
}

// stateSaveClaim is the claim template for slurmctld's state. The API server
// requires access modes and a size, so both get defaults.
func stateSaveClaim(c *slinkyv1beta1.Controller) corev1.PersistentVolumeClaim {
	spec := *c.Spec.Persistence.PersistentVolumeClaimSpec.DeepCopy()
	if len(spec.AccessModes) == 0 {
		spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	if _, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		if spec.Resources.Requests == nil {
			spec.Resources.Requests = corev1.ResourceList{}
		}
		spec.Resources.Requests[corev1.ResourceStorage] = DefaultStateSaveStorage.DeepCopy()
	}
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: slinky.SlurmctldStateSaveVolume},
		Spec:       spec,
	}
}

func podTemplate(c *slinkyv1beta1.Controller, in PodInputs) corev1.PodTemplateSpec {
	annotations := map[string]string{
		slinky.AnnotationDefaultContainer: slinky.AppSlurmctld,
		slinky.AnnotationSlurmKeyHash:     in.SlurmKeyHash,
		slinky.AnnotationJwtKeyHash:       in.JwtKeyHash,
	}
	sidecars := []corev1.Container{podspec.LogfileSidecar(c.Spec.LogFile.Container, in.Images.Logfile, slinky.SlurmctldLogFilePath)}
	if c.Spec.InplaceReconfigure {
		// The sidecar needs scontrol: the image slurmctld itself runs.
		image := in.Images.Slurmctld
		if c.Spec.Slurmctld.Image != "" {
			image = c.Spec.Slurmctld.Image
		}
		sidecars = append([]corev1.Container{reconfigureSidecar(c, image)}, sidecars...)
	} else {
		annotations[slinky.AnnotationSlurmConfigHash] = in.ConfigHash
	}
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      builder.MergeLabels(c.Labels, slinky.ControllerLabels(c)),
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{slurmctldContainer(c, in.Images.Slurmctld)},
			InitContainers:               sidecars,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true),
				RunAsUser:    ptr.To(slinky.SlurmUserUID),
				RunAsGroup:   ptr.To(slinky.SlurmUserGID),
				FSGroup:      ptr.To(slinky.SlurmUserGID),
			},
			Volumes: podVolumes(c),
		},
	}
	user := podspec.UserPodTemplate(c.Spec.Template.Metadata.Labels, c.Spec.Template.Metadata.Annotations, c.Spec.Template.Spec.PodSpec)
	return builder.MergePodTemplate(base, user)
}

// ReconfigureScript is the reconfigure sidecar's program (bash).
//
//go:embed reconfigure.sh
var ReconfigureScript string

// reconfigureSidecar runs beside slurmctld when the Controller reconfigures
// in place: it watches the mounted configuration and runs `scontrol
// reconfigure` when it changes, so a new NodeSet or partition reaches
// slurmctld without replacing its pod. It runs from the slurmctld image
// (which has scontrol, bash and tini) unless spec.reconfigure names another,
// and talks to slurmctld through its auth socket.
func reconfigureSidecar(c *slinkyv1beta1.Controller, image string) corev1.Container {
	base := corev1.Container{
		Name:          "reconfigure",
		Image:         image,
		Command:       []string{"tini", "-g", "--", "bash", "-c", ReconfigureScript},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true),
			RunAsUser:    ptr.To(slinky.SlurmUserUID),
			RunAsGroup:   ptr.To(slinky.SlurmUserGID),
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: slinky.SlurmEtcVolume, MountPath: slinky.SlurmEtcDir, ReadOnly: true},
			{Name: slinky.SlurmAuthSocketVolume, MountPath: slinky.SlurmctldAuthSocketDir, ReadOnly: true},
		},
	}
	return builder.MergeContainer(base, c.Spec.Reconfigure.Container)
}

func slurmctldContainer(c *slinkyv1beta1.Controller, image string) corev1.Container {
	probe := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(slinky.AppSlurmctld)}}
	}
	base := corev1.Container{
		Name:           slinky.AppSlurmctld,
		Image:          image,
		Ports:          []corev1.ContainerPort{{Name: slinky.AppSlurmctld, ContainerPort: slinky.SlurmctldPort, Protocol: corev1.ProtocolTCP}},
		StartupProbe:   podspec.Probe(probe(slinky.SlurmctldLivez), 6, 10),
		ReadinessProbe: podspec.Probe(probe(slinky.SlurmctldReadyz), 3, 10),
		LivenessProbe:  podspec.Probe(probe(slinky.SlurmctldLivez), 6, 10),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true),
			RunAsUser:    ptr.To(slinky.SlurmUserUID),
			RunAsGroup:   ptr.To(slinky.SlurmUserGID),
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: slinky.SlurmEtcVolume, MountPath: slinky.SlurmEtcDir, ReadOnly: true},
			{Name: slinky.SlurmPidFileVolume, MountPath: slinky.SlurmPidFileDir},
			{Name: slinky.SlurmctldStateSaveVolume, MountPath: stateSaveLocation(c.ClusterName())},
			{Name: slinky.SlurmAuthSocketVolume, MountPath: slinky.SlurmctldAuthSocketDir},
			{Name: slinky.SlurmLogFileVolume, MountPath: slinky.SlurmLogFileDir},
		},
	}
	return builder.MergeContainer(base, c.Spec.Slurmctld.Container)
}

// podVolumes puts slurm.conf, the keys and the user's files into one
// projected /etc/slurm. The mode lets the slurm group read the keys, which
// slurmctld requires to be private to SlurmUser.
func podVolumes(c *slinkyv1beta1.Controller) []corev1.Volume {
	sources := []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: slinky.ControllerConfigMapName(c.Name)},
	}}}
	if ref := c.Spec.SlurmKeyRef; ref != nil {
		sources = append(sources, podspec.SecretKeyProjection(ref, slinky.SlurmKeyFile))
	}
	if ref := c.Spec.EffectiveJwtKeyRef(); ref != nil {
		sources = append(sources, podspec.SecretKeyProjection(ref, slinky.JwtKeyFile))
	}
	// Sorted so that reordering the refs in the CR does not roll the pod.
	var extra []string
	for _, refs := range [][]corev1.LocalObjectReference{
		c.Spec.ConfigFileRefs, c.Spec.PrologScriptRefs, c.Spec.EpilogScriptRefs,
		c.Spec.PrologSlurmctldScriptRefs, c.Spec.EpilogSlurmctldScriptRefs,
	} {
		for _, r := range refs {
			extra = append(extra, r.Name)
		}
	}
	slices.Sort(extra)
	for _, name := range slices.Compact(extra) {
		sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
		}})
	}
	if ref := c.Spec.JwksKeyRef; ref != nil {
		sources = append(sources, podspec.ConfigMapKeyProjection(ref, slinky.JwksKeyFile))
	}
	return []corev1.Volume{
		{Name: slinky.SlurmEtcVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o610),
			Sources:     sources,
		}}},
		podspec.LogFileVolume(),
		podspec.PidFileVolume(),
		{Name: slinky.SlurmAuthSocketVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
}
