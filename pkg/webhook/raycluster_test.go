package webhook

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
)

func TestRayClusterSamplesAdmitted(t *testing.T) {
	for _, f := range []string{
		"config/samples/ray_v1_raycluster_minimal.yaml",
		"config/samples/ray_v1_raycluster_autoscaler.yaml",
		"config/samples/ray_v1_raycluster_gcs_ft.yaml",
		"config/samples/ray_v1_raycluster_tpu_multihost.yaml",
	} {
		t.Run(f, func(t *testing.T) {
			rc := decodeFile[rayv1.RayCluster](t, f)
			_, err := (&RayClusterValidator{}).ValidateCreate(context.Background(), &rc)
			checkAdmission(t, err, "")
		})
	}
}

func TestRayClusterValidator(t *testing.T) {
	base := func() *rayv1.RayCluster {
		rc := decodeFile[rayv1.RayCluster](t, "config/samples/ray_v1_raycluster_minimal.yaml")
		return &rc
	}
	v2 := rayv1.AutoscalerVersionV2
	tests := []struct {
		name   string
		mutate func(*rayv1.RayCluster)
		opts   validation.SpecValidationOptions
		want   string
	}{
		{name: "sample", mutate: func(*rayv1.RayCluster) {}},
		{
			name:   "name too long",
			mutate: func(c *rayv1.RayCluster) { c.Name = "a-very-long-raycluster-name-that-does-not-fit-in-services" },
			want:   `metadata.name: Invalid value: "a-very-long-raycluster-name-that-does-not-fit-in-services": RayCluster name should be no more than 53 characters`,
		},
		{
			name:   "negative minReplicas",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](-1) },
			want:   `RayCluster.ray.io "raycluster-minimal" is invalid: spec.workerGroupSpecs[0].minReplicas: Invalid value: -1: worker group workergroup has negative minReplicas -1`,
		},
		{
			name: "duplicate group",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs = append(c.Spec.WorkerGroupSpecs, *c.Spec.WorkerGroupSpecs[0].DeepCopy())
			},
			want: `spec.workerGroupSpecs[1].groupName: Duplicate value: "workergroup": worker group names must be unique`,
		},
		{
			name: "redis env without fault tolerance",
			mutate: func(c *rayv1.RayCluster) {
				setEnv(&c.Spec.HeadGroupSpec.Template.Spec.Containers[0], "RAY_REDIS_ADDRESS", "redis:6379")
			},
			want: "spec.headGroupSpec.template.spec.containers[0].env[0]: Forbidden: RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance",
		},
		{
			name:   "suspended worker group without the gate",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true) },
			want:   "spec.workerGroupSpecs[0].suspend: Forbidden: worker group workergroup can be suspended only when the RayJobDeletionPolicy feature gate is enabled",
		},
		{
			name:   "suspended worker group with the gate",
			mutate: func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true) },
			opts:   validation.SpecValidationOptions{AllowWorkerGroupSuspend: true},
		},
		{
			name: "autoscaler v2 with a restarting head",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: &v2}
				c.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
			want: `spec.headGroupSpec.template.spec.restartPolicy: Invalid value: "Always": restartPolicy for head Pod should be Never or unset when using autoscaler V2`,
		},
		{
			name: "token auth without a Ray version",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = ""
				c.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
			},
			want: "spec.rayVersion: Required value: authOptions.mode is 'token' but RayVersion was not specified",
		},
		{
			// KubeRay v1.6.2 utils.IsAuthEnabled: only mode token is auth.
			name: "authOptions without a mode needs no Ray version",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = ""
				c.Spec.AuthOptions = &rayv1.AuthOptions{}
			},
		},
		{
			name: "autoscaler v2 inferred from a new Ray version does not restrict restartPolicy",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.52.0"
				c.Spec.EnableInTreeAutoscaling = ptr.To(true)
				c.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
		},
		{
			name: "upgrade strategy on a RayJob's cluster",
			mutate: func(c *rayv1.RayCluster) {
				c.Labels = map[string]string{rayv1.RayOriginatedFromCRDLabelKey: "RayJob"}
				c.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
			},
			want: "spec.upgradeStrategy.type: Forbidden: upgradeStrategy cannot be set when RayCluster is created by RayJob",
		},
		{
			name: "several layers report together",
			mutate: func(c *rayv1.RayCluster) {
				c.Name = "Upper"
				c.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](-2)
			},
			want: `[metadata.name: Invalid value: "Upper": RayCluster name should be a valid DNS1035 label`,
		},
		{
			name: "status is not checked",
			mutate: func(c *rayv1.RayCluster) {
				for _, typ := range []rayv1.RayClusterConditionType{rayv1.RayClusterSuspending, rayv1.RayClusterSuspended} {
					c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: string(typ), Status: metav1.ConditionTrue})
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := base()
			tc.mutate(rc)
			v := &RayClusterValidator{Options: tc.opts}
			_, err := v.ValidateCreate(context.Background(), rc)
			checkAdmission(t, err, tc.want)
			_, err = v.ValidateUpdate(context.Background(), base(), rc)
			checkAdmission(t, err, tc.want)
		})
	}
}

func TestRayClusterUpdateOfDeletedObjectAdmitted(t *testing.T) {
	rc := decodeFile[rayv1.RayCluster](t, "config/samples/ray_v1_raycluster_minimal.yaml")
	rc.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](-1)
	old := rc.DeepCopy()
	rc.DeletionTimestamp = ptr.To(metav1.Now())
	rc.Finalizers = nil
	_, err := (&RayClusterValidator{}).ValidateUpdate(context.Background(), old, &rc)
	checkAdmission(t, err, "")
}

func setEnv(c *corev1.Container, name, value string) {
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

// A RayCluster that would have more Pods than --ray-max-pods-per-cluster is
// refused with the total it asks for, before a single Pod is created.
func TestRayClusterPodLimit(t *testing.T) {
	withGroup := func(replicas, hosts int32) *rayv1.RayCluster {
		rc := decodeFile[rayv1.RayCluster](t, "config/samples/ray_v1_raycluster_minimal.yaml")
		g := &rc.Spec.WorkerGroupSpecs[0]
		g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = ptr.To(replicas), ptr.To[int32](0), ptr.To(replicas), hosts
		return &rc
	}
	const maxInt32 = 2147483647
	tests := []struct {
		name  string
		rc    *rayv1.RayCluster
		limit int32
		want  string
	}{
		{name: "pod flood at the default limit", rc: withGroup(maxInt32, maxInt32),
			want: "spec.workerGroupSpecs[0]: Forbidden: the RayCluster would have 4611686014132420610 Pods (1 head and 4611686014132420609 workers); at most 1000 Pods per RayCluster are allowed (--ray-max-pods-per-cluster)"},
		{name: "exactly at the limit", rc: withGroup(999, 1)},
		{name: "one over", rc: withGroup(1000, 1), want: "would have 1001 Pods (1 head and 1000 workers); at most 1000"},
		{name: "a raised limit", rc: withGroup(1000, 2), limit: 5000},
		{name: "a lowered limit", rc: withGroup(5, 2), limit: 10, want: "spec.workerGroupSpecs[0]: Forbidden: the RayCluster would have 11 Pods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &RayClusterValidator{MaxPodsPerCluster: tc.limit}
			_, err := v.ValidateCreate(context.Background(), tc.rc)
			checkAdmission(t, err, tc.want)
		})
	}
}
