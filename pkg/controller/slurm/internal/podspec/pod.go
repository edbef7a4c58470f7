package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// logfileScript turns logPath into a FIFO and copies it to stdout, so that
// daemons that only log to a file still show up in `kubectl logs`. The FIFO
// is only created when missing: recreating it while a daemon restarts can
// leave the daemon blocked on an unlinked FIFO. cat is restarted after every
// writer closes, instead of exiting, for the same reason.
const logfileScript = `set -eu
mkdir -p "$(dirname "$SOCKET")"
if [ ! -p "$SOCKET" ]; then
	rm -f "$SOCKET"
	mkfifo -m 777 "$SOCKET"
fi
while true; do
	cat "$SOCKET" || true
done
`

// LogfileSidecar is the native sidecar (an init container that keeps
// running) that streams a daemon's log file; user overrides the defaults,
// image included.
func LogfileSidecar(user corev1.Container, image, logPath string) corev1.Container {
	base := corev1.Container{
		Name:          "logfile",
		Image:         image,
		Command:       []string{"sh", "-c", logfileScript},
		Env:           []corev1.EnvVar{{Name: "SOCKET", Value: logPath}},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts:  []corev1.VolumeMount{{Name: slinky.SlurmLogFileVolume, MountPath: slinky.SlurmLogFileDir}},
	}
	return builder.MergeContainer(base, user)
}

// LogFileVolume holds the log FIFO; memory-backed because it never holds data.
func LogFileVolume() corev1.Volume {
	return memoryVolume(slinky.SlurmLogFileVolume)
}

// PidFileVolume holds the daemons' pid files and sockets.
func PidFileVolume() corev1.Volume {
	return memoryVolume(slinky.SlurmPidFileVolume)
}

func memoryVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory},
	}}
}

// SecretKeyProjection projects one key of a Secret to path.
func SecretKeyProjection(sel *corev1.SecretKeySelector, path string) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: sel.Name},
		Items:                []corev1.KeyToPath{{Key: sel.Key, Path: path}},
		Optional:             sel.Optional,
	}}
}

// ConfigMapKeyProjection projects one key of a ConfigMap to path.
func ConfigMapKeyProjection(sel *corev1.ConfigMapKeySelector, path string) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: sel.Name},
		Items:                []corev1.KeyToPath{{Key: sel.Key, Path: path}},
		Optional:             sel.Optional,
	}}
}

// UserPodTemplate turns the CR's pod template into the shape
// builder.MergePodTemplate expects.
func UserPodTemplate(labels, annotations map[string]string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{Spec: *spec.DeepCopy()}
	out.Labels = builder.MergeLabels(labels, nil)
	out.Annotations = builder.MergeLabels(annotations, nil)
	return out
}

// Probe returns a probe with every numeric field set, using the API
// server's defaults (timeout 1s, success 1) where the daemon has no reason
// to differ. Fields left at zero would be defaulted by the server, and the
// defaulted template would then never compare equal to the built one.
func Probe(handler corev1.ProbeHandler, failureThreshold, periodSeconds int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     handler,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
		FailureThreshold: failureThreshold,
		PeriodSeconds:    periodSeconds,
	}
}
