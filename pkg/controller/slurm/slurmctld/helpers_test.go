package slurmctld

import (
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
})

func contains(s, sub string) bool { return strings.Contains(s, sub) }

type stsView struct{ *appsv1.StatefulSet }

func (v stsView) volume(name string) *corev1.Volume {
	for i := range v.Spec.Template.Spec.Volumes {
		if v.Spec.Template.Spec.Volumes[i].Name == name {
			return &v.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

func mountAt(c corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}
