package plugin

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// JobCompletionIndexFieldPath selects a pod's completion index, which Indexed
// Jobs set as an annotation; it is every framework's node rank.
var JobCompletionIndexFieldPath = fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)

// CompletionIndexEnv is an env var whose value is the pod's completion index.
func CompletionIndexEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: JobCompletionIndexFieldPath},
	}}
}

// upsert replaces the element with the same key in place, keeping the
// list's order, or appends it; later elements of add win over earlier ones.
func upsert[T any](list *[]T, key func(T) string, add ...T) {
	for _, item := range add {
		replaced := false
		for i := range *list {
			if key((*list)[i]) == key(item) {
				(*list)[i] = item
				replaced = true
				break
			}
		}
		if !replaced {
			*list = append(*list, item)
		}
	}
}

// UpsertEnv sets env vars by name.
func UpsertEnv(list *[]corev1.EnvVar, add ...corev1.EnvVar) {
	added := make([]corev1.EnvVar, 0, len(add))
	for _, e := range add {
		added = append(added, *e.DeepCopy())
	}
	upsert(list, func(e corev1.EnvVar) string { return e.Name }, added...)
}

// UpsertPorts sets container ports keyed, as the API server does, by port
// number and protocol (TCP when unset).
func UpsertPorts(list *[]corev1.ContainerPort, add ...corev1.ContainerPort) {
	upsert(list, func(p corev1.ContainerPort) string {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		return fmt.Sprintf("%d/%s", p.ContainerPort, proto)
	}, add...)
}

// UpsertVolumes sets volumes by name.
func UpsertVolumes(list *[]corev1.Volume, add ...corev1.Volume) {
	added := make([]corev1.Volume, 0, len(add))
	for _, v := range add {
		added = append(added, *v.DeepCopy())
	}
	upsert(list, func(v corev1.Volume) string { return v.Name }, added...)
}

// UpsertVolumeMounts sets volume mounts keyed by mount path, the key the API
// server uses for the list.
func UpsertVolumeMounts(list *[]corev1.VolumeMount, add ...corev1.VolumeMount) {
	upsert(list, func(m corev1.VolumeMount) string { return m.MountPath }, add...)
}
