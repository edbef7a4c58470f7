package restapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestBuildService(t *testing.T) {
	tests := []struct {
		name     string
		ra       *slinkyv1beta1.RestApi
		wantPort int32
	}{
		{"default port 6820", slinkytesting.MakeRestApi("slurm", "ns", "slurm").UID("u").Obj(), 6820},
		{"spec.service.port overrides", slinkytesting.MakeRestApi("slurm", "ns", "slurm").UID("u").Port(8080).Obj(), 8080},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.ra.DeepCopy()
			svc := BuildService(tc.ra)
			want := []corev1.ServicePort{{Name: "slurmrestd", Protocol: corev1.ProtocolTCP, Port: tc.wantPort, TargetPort: intstr.FromString("slurmrestd")}}
			if diff := cmp.Diff(want, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if svc.Name != "slurm-restapi" || svc.Labels[builder.LabelManagedBy] != builder.ManagedByGantry ||
				svc.Spec.Selector[builder.LabelName] != "slurmrestd" || svc.OwnerReferences[0].Kind != "RestApi" {
				t.Errorf("service = %+v", svc.ObjectMeta)
			}
			if diff := cmp.Diff(before, tc.ra); diff != "" {
				t.Errorf("builder modified the RestApi:\n%s", diff)
			}
		})
	}
}

func TestBuildDeployment(t *testing.T) {
	controller := slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()
	tests := []struct {
		name       string
		ra         *slinkyv1beta1.RestApi
		controller *slinkyv1beta1.Controller
		wantArgs   []string
		wantImage  string
		wantReps   int32
	}{
		{"defaults", slinkytesting.MakeRestApi("r", "ns", "slurm").Obj(), controller,
			[]string{"-a", "rest_auth/jwt", "-s", "openapi/slurmctld", "0.0.0.0:6820"}, "default-image", 1},
		{"with accounting all plugins load", slinkytesting.MakeRestApi("r", "ns", "slurm").Replicas(3).Obj(),
			slinkytesting.MakeController("slurm", "ns").Keys("keys").Accounting("db").Obj(),
			[]string{"-a", "rest_auth/jwt", "0.0.0.0:6820"}, "default-image", 3},
		// The user's args follow the operator's, as in Slinky (its
		// BuildContainer appends them, common/container.go).
		{"user args and image, operator's args and listen address kept", slinkytesting.MakeRestApi("r", "ns", "slurm").Args("-vv").Image("mine:1").Obj(), controller,
			[]string{"-a", "rest_auth/jwt", "-s", "openapi/slurmctld", "-vv", "0.0.0.0:6820"}, "mine:1", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.ra.DeepCopy()
			d := BuildDeployment(tc.ra, DeploymentInputs{Controller: tc.controller, SlurmKeyHash: "h1", Image: "default-image"})
			ctr := d.Spec.Template.Spec.Containers[0]
			if diff := cmp.Diff(tc.wantArgs, ctr.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if ctr.Image != tc.wantImage || *d.Spec.Replicas != tc.wantReps || d.Name != "r-restapi" {
				t.Errorf("image=%q replicas=%d name=%q", ctr.Image, *d.Spec.Replicas, d.Name)
			}
			env := map[string]string{}
			for _, e := range ctr.Env {
				env[e.Name] = e.Value
			}
			if env["SLURM_JWT"] != "daemon" {
				t.Errorf("env = %v", env)
			}
			if ctr.Ports[0].ContainerPort != 6820 || ctr.ReadinessProbe.TCPSocket.Port.IntValue() != 6820 {
				t.Errorf("port/probe = %+v %+v", ctr.Ports, ctr.ReadinessProbe)
			}
			pod := d.Spec.Template
			if pod.Annotations[slinky.AnnotationSlurmKeyHash] != "h1" || pod.Labels[builder.LabelManagedBy] != builder.ManagedByGantry {
				t.Errorf("pod metadata = %+v", pod.ObjectMeta)
			}
			for k, v := range d.Spec.Selector.MatchLabels {
				if pod.Labels[k] != v {
					t.Errorf("pod template does not match the selector on %s", k)
				}
			}
			var got []string
			for _, s := range pod.Spec.Volumes[0].Projected.Sources {
				if s.ConfigMap != nil {
					got = append(got, "configmap "+s.ConfigMap.Name+":"+s.ConfigMap.Items[0].Key)
				} else {
					got = append(got, "secret "+s.Secret.Name+":"+s.Secret.Items[0].Key+"->"+s.Secret.Items[0].Path)
				}
			}
			if diff := cmp.Diff([]string{"configmap slurm-config:slurm.conf", "secret keys:slurm.key->slurm.key"}, got); diff != "" {
				t.Errorf("projected sources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.ra); diff != "" {
				t.Errorf("builder modified the RestApi:\n%s", diff)
			}
		})
	}
}
