package slurmctld

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestBuildServices(t *testing.T) {
	base := func() *slinkytesting.ControllerWrapper {
		return slinkytesting.MakeController("slurm", "slinky").UID("u1").Keys("keys").Label("team", "hpc")
	}
	tests := []struct {
		name  string
		build func(*slinkyv1beta1.Controller) *corev1.Service
		c     *slinkyv1beta1.Controller
		check func(t *testing.T, svc *corev1.Service)
	}{
		{
			name: "internal service is headless and governs the pods", build: BuildInternalService, c: base().Obj(),
			check: func(t *testing.T, svc *corev1.Service) {
				if svc.Name != "slurm-controller-internal" || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
					t.Errorf("name=%q clusterIP=%q publishNotReady=%v", svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
				}
			},
		},
		{
			name: "client service on 6817", build: BuildService, c: base().Obj(),
			check: func(t *testing.T, svc *corev1.Service) {
				want := []corev1.ServicePort{{Name: "slurmctld", Protocol: corev1.ProtocolTCP, Port: 6817, TargetPort: intstr.FromString("slurmctld")}}
				if diff := cmp.Diff(want, svc.Spec.Ports); diff != "" {
					t.Errorf("ports (-want +got):\n%s", diff)
				}
				if svc.Name != "slurm-controller" || svc.Spec.ClusterIP != "" {
					t.Errorf("name=%q clusterIP=%q", svc.Name, svc.Spec.ClusterIP)
				}
			},
		},
		{
			name: "node port only with a NodePort type", build: BuildService,
			c: base().ServiceType(corev1.ServiceTypeNodePort, 30817).Obj(),
			check: func(t *testing.T, svc *corev1.Service) {
				if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != 30817 {
					t.Errorf("type=%q nodePort=%d", svc.Spec.Type, svc.Spec.Ports[0].NodePort)
				}
			},
		},
		{
			name: "node port ignored on ClusterIP", build: BuildService,
			c: base().ServiceType("", 30817).Obj(),
			check: func(t *testing.T, svc *corev1.Service) {
				if svc.Spec.Ports[0].NodePort != 0 {
					t.Errorf("nodePort=%d, the API server would reject it", svc.Spec.Ports[0].NodePort)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.c.DeepCopy()
			svc := tc.build(tc.c)
			tc.check(t, svc)
			wantSelector := map[string]string{builder.LabelName: "slurmctld", builder.LabelInstance: "slurm"}
			if diff := cmp.Diff(wantSelector, svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if svc.Labels[builder.LabelManagedBy] != builder.ManagedByGantry || svc.Labels[builder.LabelComponent] != "controller" || svc.Labels["team"] != "hpc" {
				t.Errorf("labels = %v", svc.Labels)
			}
			if len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].UID != "u1" || svc.OwnerReferences[0].Kind != "Controller" {
				t.Errorf("owner references = %v", svc.OwnerReferences)
			}
			if diff := cmp.Diff(before, tc.c); diff != "" {
				t.Errorf("builder modified the Controller:\n%s", diff)
			}
		})
	}
}

func TestBuildConfigMap(t *testing.T) {
	tests := []struct {
		name       string
		c          *slinkyv1beta1.Controller
		in         ConfigInputs
		wantKeys   []string
		wantInConf string
	}{
		{"slurm.conf, cgroup.conf and gres.conf", slinkytesting.MakeController("slurm", "ns").Keys("k").Obj(), ConfigInputs{},
			[]string{"cgroup.conf", "gres.conf", "slurm.conf"}, "SlurmctldParameters=enable_configless,reconfig_on_restart"},
		{"user cgroup.conf wins", slinkytesting.MakeController("slurm", "ns").Keys("k").Obj(), ConfigInputs{UserConfigFiles: []string{"cgroup.conf"}},
			[]string{"gres.conf", "slurm.conf"}, "ClusterName=ns_slurm"},
		{"user gres.conf wins", slinkytesting.MakeController("slurm", "ns").Keys("k").Obj(), ConfigInputs{UserConfigFiles: []string{"gres.conf", "topology.conf"}},
			[]string{"cgroup.conf", "slurm.conf"}, "GresTypes=gpu"},
		{"external has the minimal conf only", slinkytesting.MakeController("slurm", "ns").External("h", 7000).Obj(), ConfigInputs{},
			[]string{"slurm.conf"}, "SlurmctldHost=h\nSlurmctldPort=7000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm := BuildConfigMap(tc.c, tc.in)
			var keys []string
			for k := range cm.Data {
				keys = append(keys, k)
			}
			if diff := cmp.Diff(tc.wantKeys, keys, sortStrings); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if cm.Name != "slurm-config" || !contains(cm.Data["slurm.conf"], tc.wantInConf) {
				t.Errorf("name=%q slurm.conf=\n%s", cm.Name, cm.Data["slurm.conf"])
			}
		})
	}
}

func TestBuildStatefulSet(t *testing.T) {
	inputs := PodInputs{ConfigHash: "cfg", SlurmKeyHash: "sk", JwtKeyHash: "jk", Images: slinky.DefaultImages()}
	withTemplate := slinkytesting.MakeController("slurm", "slinky").Keys("keys").Image("slurmctld:25.11").PodLabel("team", "hpc").Obj()
	withTemplate.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "ctl"}
	withTemplate.Spec.Slurmctld.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}

	tests := []struct {
		name  string
		c     *slinkyv1beta1.Controller
		check func(t *testing.T, c *slinkyv1beta1.Controller, sts stsView)
	}{
		{
			name: "defaults: one replica governed by the internal service, claim template",
			c:    slinkytesting.MakeController("slurm", "slinky").Keys("keys").Obj(),
			check: func(t *testing.T, _ *slinkyv1beta1.Controller, v stsView) {
				if *v.Spec.Replicas != 1 || v.Spec.ServiceName != "slurm-controller-internal" || v.Name != "slurm-controller" {
					t.Errorf("replicas=%d serviceName=%q name=%q", *v.Spec.Replicas, v.Spec.ServiceName, v.Name)
				}
				// As Slinky's (controllerbuilder/controller_app.go): a rollout
				// does not wait on a broken pod to become Ready.
				if v.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
					t.Errorf("podManagementPolicy = %q, want Parallel", v.Spec.PodManagementPolicy)
				}
				if len(v.Spec.VolumeClaimTemplates) != 1 {
					t.Fatalf("claim templates = %v", v.Spec.VolumeClaimTemplates)
				}
				claim := v.Spec.VolumeClaimTemplates[0]
				if claim.Name != "statesave" || claim.Spec.Resources.Requests.Storage().String() != "4Gi" || claim.Spec.AccessModes[0] != corev1.ReadWriteOnce {
					t.Errorf("claim = %+v", claim)
				}
				if v.volume("statesave") != nil {
					t.Error("a pod volume shadows the claim template")
				}
			},
		},
		{
			name: "existing claim",
			c:    slinkytesting.MakeController("slurm", "slinky").Keys("keys").ExistingClaim("state").Obj(),
			check: func(t *testing.T, _ *slinkyv1beta1.Controller, v stsView) {
				vol := v.volume("statesave")
				if len(v.Spec.VolumeClaimTemplates) != 0 || vol == nil || vol.PersistentVolumeClaim.ClaimName != "state" {
					t.Errorf("claims=%v volume=%+v", v.Spec.VolumeClaimTemplates, vol)
				}
			},
		},
		{
			name: "persistence disabled uses emptyDir",
			c:    slinkytesting.MakeController("slurm", "slinky").Keys("keys").Persistence(false).Obj(),
			check: func(t *testing.T, _ *slinkyv1beta1.Controller, v stsView) {
				if vol := v.volume("statesave"); len(v.Spec.VolumeClaimTemplates) != 0 || vol == nil || vol.EmptyDir == nil {
					t.Errorf("claims=%v volume=%+v", v.Spec.VolumeClaimTemplates, vol)
				}
			},
		},
		{
			name: "keys and files projected into /etc/slurm",
			c:    slinkytesting.MakeController("slurm", "slinky").SlurmKey("a", "sk").JwtHs256Key("b", "jk").ConfigFiles("zz", "gres").PrologScripts("gres").Jwks("jw", "doc").Obj(),
			check: func(t *testing.T, _ *slinkyv1beta1.Controller, v stsView) {
				var got []string
				for _, s := range v.volume("slurm-etc").Projected.Sources {
					switch {
					case s.Secret != nil:
						got = append(got, "secret "+s.Secret.Name+":"+s.Secret.Items[0].Key+"->"+s.Secret.Items[0].Path)
					case s.ConfigMap != nil && len(s.ConfigMap.Items) > 0:
						got = append(got, "configmap "+s.ConfigMap.Name+":"+s.ConfigMap.Items[0].Key+"->"+s.ConfigMap.Items[0].Path)
					default:
						got = append(got, "configmap "+s.ConfigMap.Name)
					}
				}
				want := []string{"configmap slurm-config", "secret a:sk->slurm.key", "secret b:jk->jwt.key",
					"configmap gres", "configmap zz", "configmap jw:doc->jwks.json"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("projected sources (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "hash annotations, probes and labels on the pod",
			c:    slinkytesting.MakeController("slurm", "slinky").Keys("keys").Obj(),
			check: func(t *testing.T, _ *slinkyv1beta1.Controller, v stsView) {
				ann := v.Spec.Template.Annotations
				if ann[slinky.AnnotationSlurmConfigHash] != "cfg" || ann[slinky.AnnotationSlurmKeyHash] != "sk" || ann[slinky.AnnotationJwtKeyHash] != "jk" {
					t.Errorf("annotations = %v", ann)
				}
				if v.Spec.Template.Labels[builder.LabelManagedBy] != builder.ManagedByGantry {
					t.Error("pods without managed-by are invisible to the manager's cache")
				}
				ctr := v.Spec.Template.Spec.Containers[0]
				if ctr.Name != "slurmctld" || ctr.ReadinessProbe.HTTPGet.Path != "/readyz" || ctr.LivenessProbe.HTTPGet.Path != "/livez" ||
					ctr.StartupProbe.FailureThreshold != 6 || ctr.Ports[0].ContainerPort != 6817 {
					t.Errorf("container = %+v", ctr)
				}
				if m := mountAt(ctr, "/var/spool/slurmctld/slinky_slurm"); m == nil || m.Name != "statesave" {
					t.Errorf("state mount = %+v", m)
				}
				if ctr.Image != slinky.DefaultImages().Slurmctld {
					t.Errorf("image = %q, want the default", ctr.Image)
				}
				side := v.Spec.Template.Spec.InitContainers[0]
				if side.Image != slinky.DefaultImages().Logfile {
					t.Errorf("sidecar image = %q, want the default", side.Image)
				}
				if side.Name != "logfile" || side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways {
					t.Errorf("logfile sidecar = %+v", side)
				}
			},
		},
		{
			name: "user template and container merged under operator values",
			c:    withTemplate,
			check: func(t *testing.T, _ *slinkyv1beta1.Controller, v stsView) {
				pod := v.Spec.Template
				ctr := pod.Spec.Containers[0]
				if ctr.Image != "slurmctld:25.11" || ctr.Resources.Requests.Cpu().String() != "2" || ctr.ReadinessProbe == nil {
					t.Errorf("container = %+v", ctr)
				}
				if pod.Labels["team"] != "hpc" || pod.Labels[builder.LabelName] != "slurmctld" || pod.Spec.NodeSelector["pool"] != "ctl" {
					t.Errorf("labels=%v nodeSelector=%v", pod.Labels, pod.Spec.NodeSelector)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.c.DeepCopy()
			sts := BuildStatefulSet(tc.c, inputs)
			tc.check(t, tc.c, stsView{sts})
			if diff := cmp.Diff(sts.Spec.Selector.MatchLabels, slinky.ControllerSelectorLabels(tc.c)); diff != "" {
				t.Errorf("selector: %s", diff)
			}
			for k, val := range sts.Spec.Selector.MatchLabels {
				if sts.Spec.Template.Labels[k] != val {
					t.Errorf("pod template does not match the selector on %s", k)
				}
			}
			if diff := cmp.Diff(before, tc.c); diff != "" {
				t.Errorf("builder modified the Controller:\n%s", diff)
			}
		})
	}
}

// TestInplaceReconfigure: by default a slurm.conf change rolls the
// slurmctld pod (its hash is on the template); with inplaceReconfigure the
// template carries no config hash, so it does not change, and a reconfigure
// sidecar watches the mounted files instead. Key hashes roll it either way.
func TestInplaceReconfigure(t *testing.T) {
	images := slinky.DefaultImages()
	build := func(c *slinkyv1beta1.Controller, configHash, keyHash string) *appsv1.StatefulSet {
		return BuildStatefulSet(c, PodInputs{ConfigHash: configHash, SlurmKeyHash: keyHash, Images: images})
	}
	sidecar := func(sts *appsv1.StatefulSet) *corev1.Container {
		for i := range sts.Spec.Template.Spec.InitContainers {
			if c := &sts.Spec.Template.Spec.InitContainers[i]; c.Name == "reconfigure" {
				return c
			}
		}
		return nil
	}
	restart := slinkytesting.MakeController("slurm", "ns").Keys("k").Obj()
	if a, b := build(restart, "conf-1", "key"), build(restart, "conf-2", "key"); equality.Semantic.DeepEqual(a.Spec.Template, b.Spec.Template) {
		t.Error("by default a new slurm.conf must change the pod template (and roll the pod)")
	} else if sidecar(a) != nil {
		t.Error("no reconfigure sidecar without inplaceReconfigure")
	}

	inplace := restart.DeepCopy()
	inplace.Spec.InplaceReconfigure = true
	a, b := build(inplace, "conf-1", "key"), build(inplace, "conf-2", "key")
	if !equality.Semantic.DeepEqual(a.Spec.Template, b.Spec.Template) {
		t.Error("with inplaceReconfigure a new slurm.conf must not change the pod template")
	}
	if equality.Semantic.DeepEqual(a.Spec.Template, build(inplace, "conf-1", "key-2").Spec.Template) {
		t.Error("a new key must still change the pod template")
	}
	sc := sidecar(a)
	if sc == nil {
		t.Fatal("no reconfigure sidecar")
	}
	if sc.Image != images.Slurmctld || sc.RestartPolicy == nil || *sc.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sidecar image %q restartPolicy %v: want the slurmctld image, restartPolicy Always", sc.Image, sc.RestartPolicy)
	}
	if got := sc.Command[len(sc.Command)-1]; got != ReconfigureScript || !strings.Contains(got, "scontrol reconfigure") {
		t.Errorf("sidecar runs %q", got)
	}
	mounts := map[string]string{}
	for _, m := range sc.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts[slinky.SlurmEtcVolume] != slinky.SlurmEtcDir || mounts[slinky.SlurmAuthSocketVolume] != slinky.SlurmctldAuthSocketDir {
		t.Errorf("sidecar mounts %v: want the config and slurmctld's auth socket", mounts)
	}

	custom := inplace.DeepCopy()
	custom.Spec.Reconfigure.Image = "registry.example/slurmctld:mine"
	if got := sidecar(build(custom, "c", "k")).Image; got != "registry.example/slurmctld:mine" {
		t.Errorf("spec.reconfigure.image ignored: %q", got)
	}

	// Without spec.reconfigure.image the sidecar runs the Controller's own
	// slurmctld image, not the operator's default: a cluster that pulls
	// slurmctld from its own registry must not need a second image from
	// another.
	own := inplace.DeepCopy()
	own.Spec.Slurmctld.Image = "registry.example/slurmctld:own"
	if got := sidecar(build(own, "c", "k")).Image; got != "registry.example/slurmctld:own" {
		t.Errorf("sidecar image %q: want the Controller's spec.slurmctld.image", got)
	}
}
