package loginset

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/sshd"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
)

func testLoginSet() *slinkyv1beta1.LoginSet {
	return &slinkyv1beta1.LoginSet{
		ObjectMeta: metav1.ObjectMeta{Name: "login", Namespace: "hpc", UID: "uid-1"},
		Spec: slinkyv1beta1.LoginSetSpec{
			ControllerRef: corev1.LocalObjectReference{Name: "slurm"},
			SssdConfRef:   corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sssd"}, Key: "sssd.conf"},
		},
	}
}

func testController() *slinkyv1beta1.Controller {
	return &slinkyv1beta1.Controller{
		ObjectMeta: metav1.ObjectMeta{Name: "slurm", Namespace: "hpc"},
		Spec: slinkyv1beta1.ControllerSpec{SlurmKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "slurm.key"}},
	}
}

func container(t *testing.T, spec corev1.PodSpec, name string, init bool) corev1.Container {
	t.Helper()
	list := spec.Containers
	if init {
		list = spec.InitContainers
	}
	i := slices.IndexFunc(list, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %s", name)
	}
	return list[i]
}

func TestBuildDeployment(t *testing.T) {
	l := testLoginSet()
	in := DeploymentInputs{Controller: testController(), SlurmKeyHash: "k", SshdConfHash: "s", SssdConfHash: "d", HostKeysHash: "h", Images: DefaultImages()}
	d := BuildDeployment(l, in)

	if d.Name != "login" || *d.Spec.Replicas != 1 || *d.Spec.RevisionHistoryLimit != 0 {
		t.Errorf("name/replicas/history = %s/%d/%d", d.Name, *d.Spec.Replicas, *d.Spec.RevisionHistoryLimit)
	}
	if !metav1.IsControlledBy(d, l) {
		t.Error("the Deployment is not controlled by the LoginSet")
	}
	want := map[string]string{"app.kubernetes.io/name": "login", "app.kubernetes.io/instance": "login"}
	if !equalMaps(d.Spec.Selector.MatchLabels, want) {
		t.Errorf("selector %v, want %v", d.Spec.Selector.MatchLabels, want)
	}
	tmpl := d.Spec.Template
	for k, v := range map[string]string{
		slinky.AnnotationSlurmKeyHash: "k", AnnotationSshdConfHash: "s", AnnotationSssdConfHash: "d", AnnotationSshHostKeysHash: "h",
		slinky.AnnotationDefaultContainer: "login",
	} {
		if tmpl.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, tmpl.Annotations[k], v)
		}
	}
	if tmpl.Labels["app.kubernetes.io/component"] != "login" {
		t.Errorf("pod labels %v", tmpl.Labels)
	}
	if got := tmpl.Spec.DNSConfig.Searches; !slices.Equal(got, []string{"slurm-workers-slurm.hpc.svc.cluster.local"}) {
		t.Errorf("DNS searches %v", got)
	}

	login := container(t, tmpl.Spec, "login", false)
	if login.Image != DefaultLoginImage {
		t.Errorf("login image %q", login.Image)
	}
	if !slices.Contains(login.Env, corev1.EnvVar{Name: "SACKD_OPTIONS", Value: "--conf-server slurm-controller-0.slurm-controller-internal.hpc:6817"}) {
		t.Errorf("SACKD_OPTIONS missing or wrong: %v", login.Env)
	}
	if got := login.ReadinessProbe.Exec.Command; !slices.Equal(got, []string{"test", "-S", "/run/slurm/sack.socket"}) {
		t.Errorf("readiness %v", got)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range login.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for path, vol := range map[string]string{
		"/etc/slurm": slinky.SlurmEtcVolume, "/run/slurm": sackdVolume,
		"/etc/ssh/sshd_config": sshd.ConfigVolume, "/root/.ssh/authorized_keys": sshd.ConfigVolume,
		"/etc/sssd/sssd.conf":       sshd.SssdConfVolume,
		"/etc/ssh/ssh_host_rsa_key": sshHostKeysVolume, "/etc/ssh/ssh_host_ecdsa_key.pub": sshHostKeysVolume,
		"/etc/ssh/ssh_host_ed25519_key": sshHostKeysVolume,
	} {
		if mounts[path].Name != vol {
			t.Errorf("%s mounted from %q, want %q", path, mounts[path].Name, vol)
		}
	}

	ic := container(t, tmpl.Spec, "initconf", true)
	if ic.Image != DefaultInitconfImage || !strings.Contains(ic.Command[2], `chown "$OWNER"`) {
		t.Errorf("initconf %s %v", ic.Image, ic.Command)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range tmpl.Spec.Volumes {
		vols[v.Name] = v
	}
	key := vols[slurmConfigVolume].Projected.Sources
	if len(key) != 1 || key[0].Secret.Name != "keys" || key[0].Secret.Items[0].Path != "slurm.key" {
		t.Errorf("slurm key projection %+v", key)
	}
	if s := vols[sshd.SssdConfVolume].Projected.Sources[0].Secret; s.Name != "sssd" || s.Items[0].Key != "sssd.conf" || s.Items[0].Path != "sssd.conf" {
		t.Errorf("sssd projection %+v", s)
	}
	for _, item := range vols[sshHostKeysVolume].Projected.Sources[0].Secret.Items {
		want := int32(0o644)
		if !strings.HasSuffix(item.Key, ".pub") {
			want = 0o600
		}
		if *item.Mode != want {
			t.Errorf("host key %s mode %o, want %o", item.Key, *item.Mode, want)
		}
	}
	if vols[sshHostKeysVolume].Projected.Sources[0].Secret.Name != "login-ssh-host-keys" {
		t.Error("host keys not from login-ssh-host-keys")
	}
}

func TestBuildDeploymentUserOverrides(t *testing.T) {
	l := testLoginSet()
	l.Labels = map[string]string{"team": "a"}
	l.Spec.Replicas = ptr.To[int32](3)
	l.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	l.Spec.Login.Image = "example.com/login:1"
	l.Spec.Login.Env = []corev1.EnvVar{{Name: "SSHD_OPTIONS", Value: "-d"}}
	l.Spec.Login.VolumeMounts = []corev1.VolumeMount{{Name: "home", MountPath: "/home"}}
	l.Spec.InitConf.Image = "busybox:1"
	l.Spec.Template.Metadata.Labels = map[string]string{"app.kubernetes.io/name": "hijack", "site": "x"}
	l.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	l.Spec.Template.Spec.NodeSelector = map[string]string{"login": "true"}
	before := l.DeepCopy()

	d := BuildDeployment(l, DeploymentInputs{Controller: testController(), Images: DefaultImages()})
	if *d.Spec.Replicas != 3 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d strategy %q", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	tmpl := d.Spec.Template
	if tmpl.Labels["app.kubernetes.io/name"] != "login" || tmpl.Labels["site"] != "x" || tmpl.Labels["team"] != "a" {
		t.Errorf("labels %v: operator's must win, user's kept", tmpl.Labels)
	}
	login := container(t, tmpl.Spec, "login", false)
	if login.Image != "example.com/login:1" || len(login.Env) != 2 {
		t.Errorf("login image %q env %v", login.Image, login.Env)
	}
	if !slices.ContainsFunc(login.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/home" }) ||
		!slices.ContainsFunc(login.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/sssd/sssd.conf" }) {
		t.Errorf("mounts %v", login.VolumeMounts)
	}
	if ic := container(t, tmpl.Spec, "initconf", true); ic.Image != "busybox:1" {
		t.Errorf("initconf image %q", ic.Image)
	}
	if tmpl.Spec.NodeSelector["login"] != "true" {
		t.Error("nodeSelector lost")
	}
	if !equality.Semantic.DeepEqual(before, l) {
		t.Error("BuildDeployment modified the LoginSet")
	}
}

func TestLoginPortMovesSshdAndService(t *testing.T) {
	l := testLoginSet()
	l.Spec.Login.Ports = []corev1.ContainerPort{{Name: "login", ContainerPort: 2222}}
	l.Spec.Template.Spec.HostNetwork = true
	d := BuildDeployment(l, DeploymentInputs{Controller: testController()})
	login := container(t, d.Spec.Template.Spec, "login", false)
	if len(login.Ports) != 1 || login.Ports[0].ContainerPort != 2222 {
		t.Errorf("ports %v", login.Ports)
	}
	if cm := BuildSshConfig(l); !strings.Contains(cm.Data[sshd.ConfigFile], "Port 2222\n") {
		t.Errorf("sshd_config does not listen on 2222:\n%s", cm.Data[sshd.ConfigFile])
	}
	svc := BuildService(l)
	if p := svc.Spec.Ports[0]; p.Port != 22 || p.TargetPort != intstr.FromString("login") {
		t.Errorf("service port %+v", p)
	}
}

func TestBuildService(t *testing.T) {
	l := testLoginSet()
	l.Spec.Service.Port = 2022
	l.Spec.Service.NodePort = 30022
	l.Spec.Service.Spec.Type = corev1.ServiceTypeNodePort
	svc := BuildService(l)
	if svc.Name != "login" || svc.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("name %s type %s", svc.Name, svc.Spec.Type)
	}
	if p := svc.Spec.Ports[0]; p.Name != "login" || p.Port != 2022 || p.NodePort != 30022 {
		t.Errorf("port %+v", p)
	}
	if !equalMaps(svc.Spec.Selector, SelectorLabels(l)) {
		t.Errorf("selector %v", svc.Spec.Selector)
	}
}

func TestBuildSshConfigAndSelector(t *testing.T) {
	l := testLoginSet()
	l.Spec.RootSshAuthorizedKeys = "ssh-ed25519 AAAA alice"
	l.Spec.ExtraSshdConfig = "PermitRootLogin prohibit-password"
	cm := BuildSshConfig(l)
	if cm.Name != "login-ssh-config" || !strings.Contains(cm.Data[AuthorizedKeysFile], "ssh-ed25519 AAAA alice\n") ||
		!strings.HasSuffix(cm.Data[sshd.ConfigFile], "PermitRootLogin prohibit-password\n") {
		t.Errorf("ConfigMap %s: %v", cm.Name, cm.Data)
	}
	if got := Selector(l); got != "app.kubernetes.io/instance=login,app.kubernetes.io/name=login" {
		t.Errorf("selector %q", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
