package flux

import (
	corev1 "k8s.io/api/core/v1"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Settings are the instance's choices that Trainer v2.3 reads from env
// variables (FLUX_VIEW_IMAGE, FLUX_NETWORK_DEVICE, FLUX_QUEUE_POLICY).
type Settings struct {
	// ViewImage is the installer's image.
	ViewImage string
	// NetworkDevice is the interface the brokers bind to (default_bind).
	NetworkDevice string
	// QueuePolicy is the Fluxion queue manager's queue-policy.
	QueuePolicy string
}

// SettingsFor resolves the settings as Trainer v2.3 does: the defaults,
// then the variables of the runtime's trainer node container, then those
// of spec.trainer.env. A variable counts only with a literal, non-empty
// value: a valueFrom cannot be resolved when the objects are rendered
// (Trainer takes a TrainJob variable's empty value then, and renders an
// installer without image or a broker without device).
func SettingsFor(info *plugin.Info, trainJob *trainer.TrainJob) Settings {
	s := Settings{ViewImage: DefaultViewImage, NetworkDevice: DefaultNetworkDevice, QueuePolicy: DefaultQueuePolicy}
	var env []corev1.EnvVar
	if c := trainerTemplateContainer(info); c != nil {
		env = append(env, c.Env...)
	}
	if t := trainJob.Spec.Trainer; t != nil {
		env = append(env, t.Env...)
	}
	for _, e := range env {
		if e.ValueFrom != nil || e.Value == "" {
			continue
		}
		switch e.Name {
		case EnvViewImage:
			s.ViewImage = e.Value
		case EnvNetworkDevice:
			s.NetworkDevice = e.Value
		case EnvQueuePolicy:
			s.QueuePolicy = e.Value
		}
	}
	return s
}
