package trainjobstatus

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func info(t *testing.T, job *trainer.TrainJob) *plugin.Info {
	t.Helper()
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).
		ReplicatedJob(trainertesting.InitializerJobs()...).
		ReplicatedJob(trainertesting.TrainerJob("torch:2.5")).Obj()
	i, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// TestTrainerPodsLearnWhereToReport: with the gate on, every container of
// the trainer step (and no other) gets Trainer's three env vars and the
// projected token and CA, and the TrainJob gets its CA ConfigMap.
func TestTrainerPodsLearnWhereToReport(t *testing.T) {
	job := trainertesting.MakeTrainJob("tj", "team").Obj()
	i := info(t, job)
	p := TrainJobStatus{Config: &Config{BaseURL: "https://gantry-webhook.gantry-system.svc:10443", CACert: func() ([]byte, error) { return []byte("PEM"), nil }}}
	if err := p.EnforceMLPolicy(i, job); err != nil {
		t.Fatal(err)
	}
	node := i.TrainerPodSet().FindContainer("node")
	want := []corev1.EnvVar{
		{Name: EnvURL, Value: "https://gantry-webhook.gantry-system.svc:10443/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/tj/status"},
		{Name: EnvCACert, Value: "/var/run/secrets/kubeflow/trainer/ca.crt"},
		{Name: EnvToken, Value: "/var/run/secrets/kubeflow/trainer/token"},
	}
	if diff := cmp.Diff(want, node.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: VolumeName, MountPath: MountPath, ReadOnly: true}}, node.VolumeMounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	vols := i.TrainerPodSet().Volumes
	if len(vols) != 1 || vols[0].Projected == nil || len(vols[0].Projected.Sources) != 2 {
		t.Fatalf("volumes %+v", vols)
	}
	sat := vols[0].Projected.Sources[0].ServiceAccountToken
	if sat == nil || sat.Audience != "trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/tj/status" || ptr.Deref(sat.ExpirationSeconds, 0) != 3600 || sat.Path != "token" {
		t.Errorf("token projection %+v", sat)
	}
	if cm := vols[0].Projected.Sources[1].ConfigMap; cm == nil || cm.Name != "tj-tls-config" {
		t.Errorf("CA projection %+v", cm)
	}
	for _, ps := range i.PodSets {
		if ps.Ancestor != trainer.AncestorTrainer && (len(ps.Volumes) > 0 || len(ps.Containers[0].Env) > 0) {
			t.Errorf("%s got the endpoint too", ps.Name)
		}
	}

	comps, err := p.Build(context.Background(), nil, i, job)
	if err != nil || len(comps) != 1 {
		t.Fatalf("components %v, %v", comps, err)
	}
	cm := comps[0].Object.(*corev1.ConfigMap)
	if cm.Name != "tj-tls-config" || cm.Data["ca.crt"] != "PEM" || len(cm.OwnerReferences) != 1 {
		t.Errorf("ConfigMap %+v", cm)
	}

	// No CA yet: the build waits (an error is retried), nothing half-made.
	p.Config.CACert = func() ([]byte, error) { return nil, errors.New("not yet") }
	if _, err := p.Build(context.Background(), nil, i, job); err == nil {
		t.Error("built without a CA")
	}
	// Gate off: nothing.
	j := info(t, job)
	if err := (TrainJobStatus{}).EnforceMLPolicy(j, job); err != nil || len(j.TrainerPodSet().Volumes) != 0 {
		t.Errorf("gate off changed the pods: %v", err)
	}
	if comps, _ := (TrainJobStatus{}).Build(context.Background(), nil, j, job); len(comps) != 0 {
		t.Errorf("gate off built %v", comps)
	}
}
