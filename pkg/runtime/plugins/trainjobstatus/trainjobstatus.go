package trainjobstatus

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "TrainJobStatus"

// Trainer's names: the env vars training code reads, and where the token
// and CA are mounted.
const (
	EnvURL         = "KUBEFLOW_TRAINER_SERVER_URL"
	EnvCACert      = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
	EnvToken       = "KUBEFLOW_TRAINER_SERVER_TOKEN"
	MountPath      = "/var/run/secrets/kubeflow/trainer"
	VolumeName     = "kubeflow-trainer-token"
	CACertKey      = "ca.crt"
	TokenFile      = "token"
	TokenTTLSecond = 3600
)

// ConfigMapName is the TrainJob's CA ConfigMap.
func ConfigMapName(trainJob string) string { return trainJob + "-tls-config" }

// Config is where the status server is and what signed its certificate.
type Config struct {
	// BaseURL is https://<service>.<namespace>.svc:<port>.
	BaseURL string
	// CACert returns the CA bundle (PEM) of the serving certificate.
	CACert func() ([]byte, error)
}

// TrainJobStatus implements the ML-policy and component-builder extension
// points. A nil Config makes it do nothing (the gate is off).
type TrainJobStatus struct{ Config *Config }

var (
	_ plugin.EnforceMLPolicyPlugin  = TrainJobStatus{}
	_ plugin.ComponentBuilderPlugin = TrainJobStatus{}
)

// Name implements plugin.Plugin.
func (TrainJobStatus) Name() string { return Name }

// EnforceMLPolicy adds the env vars, the token and CA volume and its mount
// to every container of the trainer step.
func (p TrainJobStatus) EnforceMLPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	ps := info.TrainerPodSet()
	if p.Config == nil || ps == nil {
		return nil
	}
	env := []corev1.EnvVar{
		{Name: EnvURL, Value: p.Config.BaseURL + Path(trainJob.Namespace, trainJob.Name)},
		{Name: EnvCACert, Value: MountPath + "/" + CACertKey},
		{Name: EnvToken, Value: MountPath + "/" + TokenFile},
	}
	for i := range ps.Containers {
		plugin.UpsertEnv(&ps.Containers[i].Env, env...)
		plugin.UpsertVolumeMounts(&ps.Containers[i].VolumeMounts, corev1.VolumeMount{Name: VolumeName, MountPath: MountPath, ReadOnly: true})
	}
	plugin.UpsertVolumes(&ps.Volumes, corev1.Volume{Name: VolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: TokenAudience(trainJob.Namespace, trainJob.Name), ExpirationSeconds: ptr.To[int64](TokenTTLSecond), Path: TokenFile,
			}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(trainJob.Name)},
				Items:                []corev1.KeyToPath{{Key: CACertKey, Path: CACertKey}},
			}},
		},
	}}})
	return nil
}

// Build returns the CA ConfigMap, which follows the certificate's rotation.
func (p TrainJobStatus) Build(_ context.Context, _ client.Reader, info *plugin.Info, trainJob *trainer.TrainJob) ([]plugin.Component, error) {
	if p.Config == nil || info.TrainerPodSet() == nil {
		return nil, nil
	}
	ca, err := p.Config.CACert()
	if err != nil {
		return nil, fmt.Errorf("reading the TrainJob status server's CA: %w", err)
	}
	return []plugin.Component{{Object: &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: plugin.OwnedObjectMeta(ConfigMapName(trainJob.Name), trainJob, nil),
		Data:       map[string]string{CACertKey: string(ca)},
	}}}, nil
}

// TokenAudience is the audience a TrainJob's token must carry: the
// endpoint's contract with the pods, which the server checks.
func TokenAudience(namespace, name string) string {
	return fmt.Sprintf("trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status", namespace, name)
}

// Path is the endpoint of a TrainJob, under the server's base URL.
func Path(namespace, name string) string {
	return fmt.Sprintf("/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status", namespace, name)
}
