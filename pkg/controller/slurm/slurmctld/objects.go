package slurmctld

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/service"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// The builders below are pure: they read the Controller and their inputs
// and never modify either.

// objectMeta is the metadata of every object made for c: the Controller's
// own labels, overlaid by the operator's, and c as controlling owner.
func objectMeta(c *slinkyv1beta1.Controller, name string) metav1.ObjectMeta {
	return builder.NewMetadata(name, c.Namespace).
		WithLabels(c.Labels).
		WithLabels(slinky.ControllerLabels(c)).
		WithOwner(c, slinkyv1beta1.ControllerGVK).
		Build()
}

// BuildService builds the Service clients reach slurmctld through, with the
// user's spec.service customisation.
func BuildService(c *slinkyv1beta1.Controller) *corev1.Service {
	return service.New(service.Params{
		Meta:     objectMeta(c, slinky.ControllerServiceName(c.Name)),
		User:     c.Spec.Service,
		Selector: slinky.ControllerSelectorLabels(c),
		PortName: slinky.AppSlurmctld,
		Port:     slinky.SlurmctldPort,
	})
}

// BuildInternalService builds the headless Service that governs the
// StatefulSet; SlurmctldHost names pods through it.
func BuildInternalService(c *slinkyv1beta1.Controller) *corev1.Service {
	return service.NewHeadless(service.Params{
		Meta:     objectMeta(c, slinky.ControllerInternalServiceName(c.Name)),
		User:     slinkyv1beta1.ServiceSpec{Metadata: c.Spec.Service.Metadata},
		Selector: slinky.ControllerSelectorLabels(c),
		PortName: slinky.AppSlurmctld,
		Port:     slinky.SlurmctldPort,
	})
}

// BuildConfigMap builds the ConfigMap holding slurm.conf and the default
// cgroup.conf and gres.conf, each unless the user supplies one. For an
// external slurmctld it holds only the minimal slurm.conf slurmrestd needs.
func BuildConfigMap(c *slinkyv1beta1.Controller, in ConfigInputs) *corev1.ConfigMap {
	data := map[string]string{}
	if c.Spec.External {
		data[slinky.SlurmConfFile] = RenderExternalSlurmConf(c, in.Accounting)
	} else {
		data[slinky.SlurmConfFile] = RenderSlurmConf(c, in)
		for name, render := range defaultConfigFiles {
			if !slices.Contains(in.UserConfigFiles, name) {
				data[name] = render()
			}
		}
	}
	return builder.ConfigMap(objectMeta(c, slinky.ControllerConfigMapName(c.Name)), data)
}
