// Package raytesting builds RayClusters for tests with fluent wrappers, e.g.
// MakeRayCluster("rc", "default").WorkerGroup("cpu", 3).Obj(), so tests state only
// what they are about.
package raytesting

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// DefaultImage is the image of the wrapper's Ray containers.
const DefaultImage = "rayproject/ray:2.46.0"

// RayClusterWrapper wraps a RayCluster under construction.
type RayClusterWrapper struct {
	rayv1.RayCluster
}

// MakeRayCluster starts a RayCluster named name in namespace ns with a head
// Pod of one Ray container and no worker groups.
func MakeRayCluster(name, ns string) *RayClusterWrapper {
	return &RayClusterWrapper{rayv1.RayCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayClusterKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ns,
			UID:       types.UID(name + "-uid"),
		},
		Spec: rayv1.RayClusterSpec{
			RayVersion: "2.46.0",
			HeadGroupSpec: rayv1.HeadGroupSpec{
				RayStartParams: map[string]string{},
				Template:       podTemplate("ray-head"),
			},
		},
	}}
}

func podTemplate(containerName string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: containerName, Image: DefaultImage}},
	}}
}

// Obj returns a copy of the built RayCluster.
func (w *RayClusterWrapper) Obj() *rayv1.RayCluster { return w.RayCluster.DeepCopy() }

// Clone returns a copy of the wrapper, to vary a common base.
func (w *RayClusterWrapper) Clone() *RayClusterWrapper {
	return &RayClusterWrapper{*w.RayCluster.DeepCopy()}
}

// UID sets the UID.
func (w *RayClusterWrapper) UID(uid string) *RayClusterWrapper {
	w.RayCluster.UID = types.UID(uid)
	return w
}

// Label sets a label on the RayCluster.
func (w *RayClusterWrapper) Label(k, v string) *RayClusterWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Annotation sets an annotation on the RayCluster.
func (w *RayClusterWrapper) Annotation(k, v string) *RayClusterWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// RayVersion sets spec.rayVersion.
func (w *RayClusterWrapper) RayVersion(v string) *RayClusterWrapper {
	w.Spec.RayVersion = v
	return w
}

// Image sets the image of the head's and every group's Ray container.
func (w *RayClusterWrapper) Image(image string) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = image
	for i := range w.Spec.WorkerGroupSpecs {
		w.Spec.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = image
	}
	return w
}

// HeadStartParam sets one head rayStartParam.
func (w *RayClusterWrapper) HeadStartParam(k, v string) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.RayStartParams[k] = v
	return w
}

// HeadLimits sets the head Ray container's limits (and equal requests).
func (w *RayClusterWrapper) HeadLimits(list corev1.ResourceList) *RayClusterWrapper {
	c := &w.Spec.HeadGroupSpec.Template.Spec.Containers[0]
	c.Resources.Limits = list.DeepCopy()
	c.Resources.Requests = list.DeepCopy()
	return w
}

// HeadContainer replaces the head's Ray container.
func (w *RayClusterWrapper) HeadContainer(c corev1.Container) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.Template.Spec.Containers[0] = c
	return w
}

// HeadPort adds a port to the head's Ray container.
func (w *RayClusterWrapper) HeadPort(name string, port int32) *RayClusterWrapper {
	c := &w.Spec.HeadGroupSpec.Template.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port})
	return w
}

// HeadTemplateLabel sets a label on the head Pod template.
func (w *RayClusterWrapper) HeadTemplateLabel(k, v string) *RayClusterWrapper {
	t := &w.Spec.HeadGroupSpec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[k] = v
	return w
}

// HeadResources sets headGroupSpec.resources.
func (w *RayClusterWrapper) HeadResources(r map[string]string) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.Resources = r
	return w
}

// HeadService sets headGroupSpec.headService.
func (w *RayClusterWrapper) HeadService(svc *corev1.Service) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.HeadService = svc
	return w
}

// ServiceType sets headGroupSpec.serviceType.
func (w *RayClusterWrapper) ServiceType(t corev1.ServiceType) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.ServiceType = t
	return w
}

// HeadServiceAnnotation sets one of spec.headServiceAnnotations.
func (w *RayClusterWrapper) HeadServiceAnnotation(k, v string) *RayClusterWrapper {
	if w.Spec.HeadServiceAnnotations == nil {
		w.Spec.HeadServiceAnnotations = map[string]string{}
	}
	w.Spec.HeadServiceAnnotations[k] = v
	return w
}

// HeadServiceAccount sets the head template's service account.
func (w *RayClusterWrapper) HeadServiceAccount(name string) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName = name
	return w
}

// WorkerGroup adds a group of single-host replicas with min 0 and max 10.
func (w *RayClusterWrapper) WorkerGroup(name string, replicas int32) *RayClusterWrapper {
	w.Spec.WorkerGroupSpecs = append(w.Spec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{
		GroupName:      name,
		Replicas:       ptr.To(replicas),
		MinReplicas:    ptr.To[int32](0),
		MaxReplicas:    ptr.To[int32](10),
		NumOfHosts:     1,
		RayStartParams: map[string]string{},
		Template:       podTemplate("ray-worker"),
	})
	return w
}

// MultiHostWorkerGroup adds a group whose replicas are hosts Pods each.
func (w *RayClusterWrapper) MultiHostWorkerGroup(name string, replicas, hosts int32) *RayClusterWrapper {
	w.WorkerGroup(name, replicas)
	w.Spec.WorkerGroupSpecs[len(w.Spec.WorkerGroupSpecs)-1].NumOfHosts = hosts
	return w
}

// Group returns the named worker group for in-place edits; it panics when
// there is none, which in a test is a bug in the test.
func (w *RayClusterWrapper) Group(name string) *rayv1.WorkerGroupSpec {
	for i := range w.Spec.WorkerGroupSpecs {
		if w.Spec.WorkerGroupSpecs[i].GroupName == name {
			return &w.Spec.WorkerGroupSpecs[i]
		}
	}
	panic("no worker group " + name)
}

// WorkerStartParam sets one rayStartParam of a group.
func (w *RayClusterWrapper) WorkerStartParam(group, k, v string) *RayClusterWrapper {
	w.Group(group).RayStartParams[k] = v
	return w
}

// WorkerLimits sets a group's Ray container limits (and equal requests).
func (w *RayClusterWrapper) WorkerLimits(group string, list corev1.ResourceList) *RayClusterWrapper {
	c := &w.Group(group).Template.Spec.Containers[0]
	c.Resources.Limits = list.DeepCopy()
	c.Resources.Requests = list.DeepCopy()
	return w
}

// WorkerResources sets a group's top-level Ray resources.
func (w *RayClusterWrapper) WorkerResources(group string, r map[string]string) *RayClusterWrapper {
	w.Group(group).Resources = r
	return w
}

// WorkerLabels sets a group's top-level Ray node labels.
func (w *RayClusterWrapper) WorkerLabels(group string, l map[string]string) *RayClusterWrapper {
	w.Group(group).Labels = l
	return w
}

// Autoscaling turns the in-tree autoscaler on.
func (w *RayClusterWrapper) Autoscaling() *RayClusterWrapper {
	w.Spec.EnableInTreeAutoscaling = ptr.To(true)
	return w
}

// AutoscalerOptions sets spec.autoscalerOptions.
func (w *RayClusterWrapper) AutoscalerOptions(o *rayv1.AutoscalerOptions) *RayClusterWrapper {
	w.Spec.AutoscalerOptions = o
	return w
}

// GCSFaultTolerance enables GCS fault tolerance against redisAddress.
func (w *RayClusterWrapper) GCSFaultTolerance(redisAddress string) *RayClusterWrapper {
	w.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: redisAddress}
	return w
}

// RedisPasswordFromSecret makes the GCS FT password come from a Secret key.
func (w *RayClusterWrapper) RedisPasswordFromSecret(secret, key string) *RayClusterWrapper {
	w.Spec.GcsFaultToleranceOptions.RedisPassword = &rayv1.RedisCredential{ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
	}}
	return w
}

// RedisUsername sets a literal GCS FT Redis username.
func (w *RayClusterWrapper) RedisUsername(user string) *RayClusterWrapper {
	w.Spec.GcsFaultToleranceOptions.RedisUsername = &rayv1.RedisCredential{Value: user}
	return w
}

// UpgradeStrategy sets spec.upgradeStrategy.type.
func (w *RayClusterWrapper) UpgradeStrategy(t rayv1.RayClusterUpgradeType) *RayClusterWrapper {
	w.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(t)}
	return w
}

// Auth sets spec.authOptions.
func (w *RayClusterWrapper) Auth(a *rayv1.AuthOptions) *RayClusterWrapper {
	w.Spec.AuthOptions = a
	return w
}

// Resources is a shorthand for a ResourceList from name/quantity pairs.
func Resources(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic("Resources needs name/quantity pairs")
	}
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}
