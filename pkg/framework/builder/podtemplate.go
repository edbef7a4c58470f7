package builder

import (
	"encoding/json"
	"reflect"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// MergePodTemplate layers a user's pod template over the operator's base
// template and returns a new template; neither input is modified.
//
// Rules: labels and annotations set by the operator win (selectors and
// hashes depend on them) and user keys are kept; everywhere else a value the
// user set overrides the operator default. Containers and init containers are
// merged by name with MergeContainer, volumes by name (a user volume replaces
// the operator's volume of the same name), maps key by key, other lists are
// replaced when the user sets them, pointers and scalars when non-zero.
// Elements only the user has are appended after the operator's, in the
// user's order.
func MergePodTemplate(base, user corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := *base.DeepCopy()
	u := user.DeepCopy()

	out.Labels = MergeLabels(u.Labels, out.Labels)
	out.Annotations = MergeLabels(u.Annotations, out.Annotations)

	containers := mergeByKey(out.Spec.Containers, u.Spec.Containers, containerName, MergeContainer)
	initContainers := mergeByKey(out.Spec.InitContainers, u.Spec.InitContainers, containerName, MergeContainer)
	volumes := mergeByKey(out.Spec.Volumes, u.Spec.Volumes, func(v corev1.Volume) string { return v.Name }, replace[corev1.Volume])
	// The keyed lists are merged above; clearing them on the user copy keeps
	// the generic overlay from replacing the merged result.
	u.Spec.Containers, u.Spec.InitContainers, u.Spec.Volumes = nil, nil, nil
	overlay(reflect.ValueOf(&out.Spec).Elem(), reflect.ValueOf(&u.Spec).Elem())
	out.Spec.Containers, out.Spec.InitContainers, out.Spec.Volumes = containers, initContainers, volumes
	return out
}

// MergeContainer layers user over base the same way: env merged by name,
// ports by name (unnamed ports by number and protocol), volume mounts by
// mount path, volume devices by device path; each user element replaces the
// base element with the same key. Neither input is modified.
func MergeContainer(base, user corev1.Container) corev1.Container {
	out := *base.DeepCopy()
	u := user.DeepCopy()

	env := mergeByKey(out.Env, u.Env, func(e corev1.EnvVar) string { return e.Name }, replace[corev1.EnvVar])
	ports := mergeByKey(out.Ports, u.Ports, portKey, replace[corev1.ContainerPort])
	mounts := mergeByKey(out.VolumeMounts, u.VolumeMounts, func(m corev1.VolumeMount) string { return m.MountPath }, replace[corev1.VolumeMount])
	devices := mergeByKey(out.VolumeDevices, u.VolumeDevices, func(d corev1.VolumeDevice) string { return d.DevicePath }, replace[corev1.VolumeDevice])
	u.Env, u.Ports, u.VolumeMounts, u.VolumeDevices = nil, nil, nil, nil
	overlay(reflect.ValueOf(&out).Elem(), reflect.ValueOf(u).Elem())
	out.Env, out.Ports, out.VolumeMounts, out.VolumeDevices = env, ports, mounts, devices
	return out
}

func containerName(c corev1.Container) string { return c.Name }

func portKey(p corev1.ContainerPort) string {
	if p.Name != "" {
		return "name:" + p.Name
	}
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return "port:" + strconv.Itoa(int(p.ContainerPort)) + "/" + string(proto)
}

func replace[T any](_, user T) T { return user }

// mergeByKey merges two lists whose elements are identified by key. Both
// inputs are private copies owned by the caller of mergeByKey.
func mergeByKey[T any](base, user []T, key func(T) string, merge func(base, user T) T) []T {
	if len(user) == 0 {
		return base
	}
	out := make([]T, 0, len(base)+len(user))
	userByKey := make(map[string]int, len(user))
	for i, el := range user {
		userByKey[key(el)] = i
	}
	used := make(map[int]bool, len(user))
	for _, b := range base {
		if i, ok := userByKey[key(b)]; ok {
			out = append(out, merge(b, user[i]))
			used[i] = true
			continue
		}
		out = append(out, b)
	}
	for i, el := range user {
		if !used[i] {
			out = append(out, el)
		}
	}
	return out
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// overlay sets every field of dst that src sets: structs field by field,
// maps key by key, everything else (pointers, slices, scalars, and structs
// with their own JSON form such as Quantity or IntOrString) wholesale when
// non-zero. src must be a private copy: its values are moved, not copied.
func overlay(dst, src reflect.Value) {
	switch dst.Kind() {
	case reflect.Struct:
		if reflect.PointerTo(dst.Type()).Implements(jsonMarshaler) || dst.Type().Implements(jsonMarshaler) {
			if !src.IsZero() {
				dst.Set(src)
			}
			return
		}
		for i := 0; i < dst.NumField(); i++ {
			if !dst.Type().Field(i).IsExported() {
				continue
			}
			overlay(dst.Field(i), src.Field(i))
		}
	case reflect.Map:
		if src.Len() == 0 {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMapWithSize(dst.Type(), src.Len()))
		}
		iter := src.MapRange()
		for iter.Next() {
			dst.SetMapIndex(iter.Key(), iter.Value())
		}
	case reflect.Slice:
		if src.Len() > 0 {
			dst.Set(src)
		}
	default:
		if !src.IsZero() {
			dst.Set(src)
		}
	}
}
