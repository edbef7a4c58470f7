package flux

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/jobset"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// fluxRuntime is Trainer's example runtime (examples/flux/flux-runtime.yaml)
// with the policy's numProcPerNode as the API server defaults it; edit
// changes its node container.
func fluxRuntime(procs int32, edit func(*corev1.Container)) *trainer.TrainingRuntimeSpec {
	spec := trainertesting.MakeRuntimeSpec().NumNodes(1).Flux().
		ReplicatedJob(trainertesting.TrainerJob("ubuntu:jammy")).Obj()
	spec.MLPolicy.Flux.NumProcPerNode = ptr.To(procs)
	if edit != nil {
		edit(&spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0])
	}
	return spec
}

// built is what the plugin and the JobSet render make of a job.
type built struct {
	info      *plugin.Info
	jobSet    *jobsetv1alpha2.JobSet
	configMap *corev1.ConfigMap
	secret    *corev1.Secret
	comps     []plugin.Component
}

// build validates, enforces the policy, builds the components against
// existing (empty when nil) and renders the JobSet, as pkg/runtime does.
func build(t *testing.T, job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec, existing client.Reader) built {
	t.Helper()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	if errs := (Flux{}).Validate(info, nil, job); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	if err := (Flux{}).EnforceMLPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	if existing == nil {
		existing = fake.NewClientBuilder().Build()
	}
	comps, err := (Flux{}).Build(context.Background(), existing, info, job)
	if err != nil {
		t.Fatal(err)
	}
	b := built{info: info, jobSet: jobset.Render(info, job), comps: comps}
	for _, c := range comps {
		switch o := c.Object.(type) {
		case *corev1.ConfigMap:
			b.configMap = o
		case *corev1.Secret:
			b.secret = o
		default:
			t.Fatalf("unexpected component %T", o)
		}
	}
	if b.configMap == nil {
		t.Fatal("no ConfigMap")
	}
	return b
}

func (b built) podSpec(t *testing.T) *corev1.PodSpec {
	t.Helper()
	for i := range b.jobSet.Spec.ReplicatedJobs {
		if b.jobSet.Spec.ReplicatedJobs[i].Name == trainer.TrainerNodeName {
			return &b.jobSet.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
		}
	}
	t.Fatal("no node job")
	return nil
}

// lammpsJob is Trainer's examples/flux/lammps-train-job.yaml.
func lammpsJob() *trainertesting.TrainJobWrapper {
	return trainertesting.MakeTrainJob("lammps", "hpc").NumNodes(2).NumProcPerNode(4).
		Image("ghcr.io/converged-computing/metric-lammps:latest").
		Command("lmp", "-v", "x", "4", "-v", "y", "4", "-v", "z", "4", "-in", "in.reaxc.hns", "-nocite").
		Env("FLUX_VIEW_IMAGE", "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy")
}

// TestRender: the pod template of Trainer v2.3's Flux plugin, for its
// LAMMPS example: volumes, mounts, the installer, the wrapped command.
func TestRender(t *testing.T) {
	b := build(t, lammpsJob().Obj(), fluxRuntime(1, nil), nil)
	pod := b.podSpec(t)

	wantVolumes := []corev1.Volume{
		{Name: "spack-install", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "flux-install", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "lammps-flux-entrypoint", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "lammps-flux-entrypoint"}, DefaultMode: ptr.To[int32](0o755)}}},
		{Name: "shared-memory", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "flux-curve", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "lammps-flux-curve", DefaultMode: ptr.To[int32](0o400)}}},
	}
	if diff := cmp.Diff(wantVolumes, pod.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	wantInit := []corev1.Container{{
		Name:    "flux-installer",
		Image:   "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy",
		Command: []string{"/bin/bash", "/etc/flux-config/init.sh"},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "flux-install", MountPath: "/mnt/flux"},
			{Name: "lammps-flux-entrypoint", MountPath: "/etc/flux-config", ReadOnly: true},
		},
	}}
	if diff := cmp.Diff(wantInit, pod.InitContainers); diff != "" {
		t.Errorf("init containers (-want +got):\n%s", diff)
	}
	node := pod.Containers[0]
	wantMounts := []corev1.VolumeMount{
		{Name: "flux-install", MountPath: "/mnt/flux"},
		{Name: "spack-install", MountPath: "/opt/software"},
		{Name: "lammps-flux-entrypoint", MountPath: "/etc/flux-config", ReadOnly: true},
		{Name: "flux-curve", MountPath: "/curve", ReadOnly: true},
		{Name: "shared-memory", MountPath: "/dev/shm", ReadOnly: true},
	}
	if diff := cmp.Diff(wantMounts, node.VolumeMounts); diff != "" {
		t.Errorf("node mounts (-want +got):\n%s", diff)
	}
	wantCommand := []string{"/bin/bash", "/etc/flux-config/entrypoint.sh", "lmp -v x 4 -v y 4 -v z 4 -in in.reaxc.hns -nocite"}
	if diff := cmp.Diff(wantCommand, node.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if node.Args != nil {
		t.Errorf("args = %q, want none", node.Args)
	}
	if node.Image != "ghcr.io/converged-computing/metric-lammps:latest" {
		t.Errorf("image = %q", node.Image)
	}
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "FLUX_VIEW_IMAGE", Value: "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"}}, node.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	rj := b.jobSet.Spec.ReplicatedJobs[0]
	if *rj.Template.Spec.Parallelism != 2 || *rj.Template.Spec.Completions != 2 {
		t.Errorf("pods = %d/%d, want 2", *rj.Template.Spec.Parallelism, *rj.Template.Spec.Completions)
	}

	// The objects: owned by the TrainJob; the Secret immutable and create-only.
	for _, c := range b.comps {
		refs := c.Object.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != trainer.TrainJobKind || refs[0].Name != "lammps" || !ptr.Deref(refs[0].Controller, false) {
			t.Errorf("%T owner references %+v", c.Object, refs)
		}
		if c.Object.GetNamespace() != "hpc" {
			t.Errorf("%T namespace %q", c.Object, c.Object.GetNamespace())
		}
		if _, isSecret := c.Object.(*corev1.Secret); c.CreateOnly != isSecret {
			t.Errorf("%T CreateOnly = %v", c.Object, c.CreateOnly)
		}
	}
	if b.configMap.Name != "lammps-flux-entrypoint" || b.secret == nil || b.secret.Name != "lammps-flux-curve" {
		t.Fatalf("objects %q, %v", b.configMap.Name, b.secret)
	}
	if !ptr.Deref(b.secret.Immutable, false) || b.secret.Type != "" {
		t.Errorf("Secret immutable %v, type %q", b.secret.Immutable, b.secret.Type)
	}
	if diff := cmp.Diff([]string{"broker.toml", "entrypoint.sh", "init.sh"}, keysOf(b.configMap.Data)); diff != "" {
		t.Errorf("ConfigMap keys (-want +got):\n%s", diff)
	}
	checkCert(t, string(b.secret.Data["curve.cert"]), "lammps")
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sortedStrings(out)
}

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

var settingLine = regexp.MustCompile(`(?m)^(hostlist|lead_host|resources|run_flags)=(.*)$`)

// settingsOf is the settings lines of the scripts, as written.
func settingsOf(t *testing.T, cm *corev1.ConfigMap) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, key := range []string{"init.sh", "entrypoint.sh"} {
		for _, m := range settingLine.FindAllStringSubmatch(cm.Data[key], -1) {
			if _, dup := out[m[1]]; dup {
				t.Fatalf("%s set twice", m[1])
			}
			out[m[1]] = m[2]
		}
	}
	return out
}

// TestInstanceFacts: hostlist, lead host, flux R encode resources and
// flux run flags from the node count, the processes per node and the GPUs,
// as Trainer v2.3 derives them.
func TestInstanceFacts(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	cases := map[string]struct {
		job     *trainer.TrainJob
		runtime *trainer.TrainingRuntimeSpec
		want    map[string]string
	}{
		"one node, one process": {
			job: trainertesting.MakeTrainJob("j", "ns").Obj(), runtime: fluxRuntime(1, nil),
			want: map[string]string{"hostlist": "'j-node-0-[0]'", "lead_host": "j-node-0-0", "resources": "(--cores=0)", "run_flags": "(-N 1 -n 1)"},
		},
		"TrainJob numNodes and numProcPerNode": {
			job: trainertesting.MakeTrainJob("j", "ns").NumNodes(3).NumProcPerNode(4).Obj(), runtime: fluxRuntime(2, nil),
			want: map[string]string{"hostlist": "'j-node-0-[0-2]'", "lead_host": "j-node-0-0", "resources": "(--cores=0-3)", "run_flags": "(-N 3 -n 12)"},
		},
		"runtime numProcPerNode and GPUs": {
			job: trainertesting.MakeTrainJob("j", "ns").NumNodes(2).Obj(),
			runtime: fluxRuntime(2, func(c *corev1.Container) {
				c.Resources.Limits = gpus("4")
			}),
			want: map[string]string{"hostlist": "'j-node-0-[0-1]'", "lead_host": "j-node-0-0", "resources": "(--cores=0-1 --gpu=0-3)", "run_flags": "(-N 2 -n 4 -g 4)"},
		},
		"TrainJob resources replace the runtime's": {
			job: trainertesting.MakeTrainJob("j", "ns").NumNodes(2).ResourcesPerNode(gpus("1"), nil).Obj(),
			runtime: fluxRuntime(1, func(c *corev1.Container) {
				c.Resources.Limits = gpus("4")
			}),
			want: map[string]string{"hostlist": "'j-node-0-[0-1]'", "lead_host": "j-node-0-0", "resources": "(--cores=0 --gpu=0)", "run_flags": "(-N 2 -n 2 -g 1)"},
		},
		"no spec.trainer: the runtime's numNodes": {
			job: trainertesting.MakeTrainJob("j", "ns").Obj(),
			runtime: func() *trainer.TrainingRuntimeSpec {
				s := fluxRuntime(1, nil)
				s.MLPolicy.NumNodes = ptr.To[int32](3)
				return s
			}(),
			want: map[string]string{"hostlist": "'j-node-0-[0-2]'", "lead_host": "j-node-0-0", "resources": "(--cores=0)", "run_flags": "(-N 3 -n 3)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := build(t, tc.job, tc.runtime, nil)
			if diff := cmp.Diff(tc.want, settingsOf(t, b.configMap)); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			nodes := strings.Fields(strings.Trim(tc.want["run_flags"], "()"))[1]
			if got := fmt.Sprint(*b.jobSet.Spec.ReplicatedJobs[0].Template.Spec.Parallelism); got != nodes {
				t.Errorf("pods = %s, want %s", got, nodes)
			}
		})
	}
}

// TestBrokerConfig: broker.toml is TOML with Trainer v2.3's settings, and
// values that TOML must escape stay intact.
func TestBrokerConfig(t *testing.T) {
	spec := fluxRuntime(1, nil)
	spec.Template.Spec.Network = &jobsetv1alpha2.Network{Subdomain: "flux-svc"}
	job := trainertesting.MakeTrainJob("j", "team-a").NumNodes(4).Env("FLUX_QUEUE_POLICY", `odd"policy\`).Obj()
	b := build(t, job, spec, nil)
	var got map[string]any
	if err := toml.Unmarshal([]byte(b.configMap.Data["broker.toml"]), &got); err != nil {
		t.Fatalf("broker.toml: %v\n%s", err, b.configMap.Data["broker.toml"])
	}
	want := map[string]any{
		"access":   map[string]any{"allow-guest-user": true, "allow-root-owner": true},
		"resource": map[string]any{"path": "/mnt/flux/config/etc/flux/system/R"},
		"bootstrap": map[string]any{
			"curve_cert":      "/mnt/flux/config/etc/curve/curve.cert",
			"default_port":    int64(8050),
			"default_bind":    "tcp://eth0:%p",
			"default_connect": "tcp://%h.flux-svc.team-a.svc.cluster.local:%p",
			"hosts":           []any{map[string]any{"host": "j-node-0-[0-3]"}},
		},
		"archive": map[string]any{
			"dbpath": "/mnt/flux/config/var/lib/flux/job-archive.sqlite", "period": "1m", "busytimeout": "50s",
		},
		"sched-fluxion-qmanager": map[string]any{"queue-policy": `odd"policy\`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("broker.toml (-want +got):\n%s", diff)
	}
}

// TestBrokerConnectsInTheClusterDomain: the manager's cluster domain
// (CLUSTER_DOMAIN) replaces cluster.local in the brokers' addresses.
func TestBrokerConnectsInTheClusterDomain(t *testing.T) {
	job := trainertesting.MakeTrainJob("j", "team-a").NumNodes(2).Obj()
	info, err := plugin.NewInfo(job, fluxRuntime(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	f := Flux{ClusterDomain: "corp.example"}
	if err := f.EnforceMLPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	comps, err := f.Build(context.Background(), fake.NewClientBuilder().Build(), info, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comps {
		if cm, ok := c.Object.(*corev1.ConfigMap); ok {
			if want := `default_connect = 'tcp://%h.j.team-a.svc.corp.example:%p'`; !strings.Contains(cm.Data["broker.toml"], want) {
				t.Errorf("broker.toml lacks %s:\n%s", want, cm.Data["broker.toml"])
			}
			return
		}
	}
	t.Fatal("no ConfigMap built")
}

// TestSettingsPrecedence: defaults, then the runtime's node container env,
// then spec.trainer.env; valueFrom and empty values do not count.
func TestSettingsPrecedence(t *testing.T) {
	fromField := corev1.EnvVar{Name: "FLUX_VIEW_IMAGE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	cases := map[string]struct {
		runtimeEnv []corev1.EnvVar
		jobEnv     []corev1.EnvVar
		want       Settings
	}{
		"defaults": {want: Settings{ViewImage: DefaultViewImage, NetworkDevice: "eth0", QueuePolicy: "fcfs"}},
		"runtime": {
			runtimeEnv: []corev1.EnvVar{{Name: "FLUX_VIEW_IMAGE", Value: "rt-view"}, {Name: "FLUX_NETWORK_DEVICE", Value: "ib0"}, {Name: "FLUX_QUEUE_POLICY", Value: "easy"}},
			want:       Settings{ViewImage: "rt-view", NetworkDevice: "ib0", QueuePolicy: "easy"},
		},
		"TrainJob over runtime": {
			runtimeEnv: []corev1.EnvVar{{Name: "FLUX_VIEW_IMAGE", Value: "rt-view"}, {Name: "FLUX_NETWORK_DEVICE", Value: "ib0"}},
			jobEnv:     []corev1.EnvVar{{Name: "FLUX_VIEW_IMAGE", Value: "job-view"}},
			want:       Settings{ViewImage: "job-view", NetworkDevice: "ib0", QueuePolicy: "fcfs"},
		},
		"valueFrom and empty values are ignored": {
			runtimeEnv: []corev1.EnvVar{{Name: "FLUX_VIEW_IMAGE", Value: "rt-view"}},
			jobEnv:     []corev1.EnvVar{fromField, {Name: "FLUX_QUEUE_POLICY", Value: ""}, {Name: "OTHER", Value: "x"}},
			want:       Settings{ViewImage: "rt-view", NetworkDevice: "eth0", QueuePolicy: "fcfs"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := fluxRuntime(1, func(c *corev1.Container) { c.Env = tc.runtimeEnv })
			job := trainertesting.MakeTrainJob("j", "ns").NumNodes(1).Obj()
			job.Spec.Trainer.Env = tc.jobEnv
			b := build(t, job, spec, nil)
			if got := b.podSpec(t).InitContainers[0].Image; got != tc.want.ViewImage {
				t.Errorf("installer image = %q, want %q", got, tc.want.ViewImage)
			}
			var broker brokerConfig
			if err := toml.Unmarshal([]byte(b.configMap.Data["broker.toml"]), &broker); err != nil {
				t.Fatal(err)
			}
			if got, want := broker.Bootstrap.DefaultBind, "tcp://"+tc.want.NetworkDevice+":%p"; got != want {
				t.Errorf("default_bind = %q, want %q", got, want)
			}
			if broker.QueueManager.QueuePolicy != tc.want.QueuePolicy {
				t.Errorf("queue-policy = %q, want %q", broker.QueueManager.QueuePolicy, tc.want.QueuePolicy)
			}
			// The variables themselves stay in the trainer's env.
			for _, e := range tc.jobEnv {
				if !hasEnv(b.podSpec(t).Containers[0].Env, e.Name) {
					t.Errorf("env %s dropped", e.Name)
				}
			}
		})
	}
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// TestWrappedCommand: the command line the entrypoint gets, from the
// TrainJob's or the runtime's command and the TrainJob's args; the
// runtime's args stay on the container.
func TestWrappedCommand(t *testing.T) {
	withRuntimeCommand := fluxRuntime(1, func(c *corev1.Container) {
		c.Command = []string{"sleep"}
		c.Args = []string{"infinity"}
	})
	cases := map[string]struct {
		job      *trainer.TrainJob
		runtime  *trainer.TrainingRuntimeSpec
		wantLine string
		wantArgs []string
	}{
		"no command: interactive":                       {job: trainertesting.MakeTrainJob("j", "ns").Obj(), runtime: fluxRuntime(1, nil), wantLine: ""},
		"the runtime's command":                         {job: trainertesting.MakeTrainJob("j", "ns").Obj(), runtime: withRuntimeCommand, wantLine: "sleep", wantArgs: []string{"infinity"}},
		"the runtime's command and the TrainJob's args": {job: trainertesting.MakeTrainJob("j", "ns").Args("10").Obj(), runtime: withRuntimeCommand, wantLine: "sleep 10", wantArgs: []string{"infinity"}},
		"the TrainJob's command":                        {job: trainertesting.MakeTrainJob("j", "ns").Command("python", "train.py").Args("--lr=0.1").Obj(), runtime: withRuntimeCommand, wantLine: "python train.py --lr=0.1", wantArgs: []string{"infinity"}},
		"words that need quoting": {
			job:      trainertesting.MakeTrainJob("j", "ns").Command("python", "-c", "print('hello world')").Args("--name", "a b", "").Obj(),
			runtime:  fluxRuntime(1, nil),
			wantLine: `python -c "print('hello world')" --name 'a b' ''`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := build(t, tc.job, tc.runtime, nil).podSpec(t).Containers[0]
			if diff := cmp.Diff([]string{"/bin/bash", "/etc/flux-config/entrypoint.sh", tc.wantLine}, node.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantArgs, node.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a NUL byte is a build error", func(t *testing.T) {
		job := trainertesting.MakeTrainJob("j", "ns").Command("echo", "a\x00b").Obj()
		info, err := plugin.NewInfo(job, fluxRuntime(1, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := (Flux{}).EnforceMLPolicy(info, job); !plugin.IsBuildError(err) {
			t.Errorf("err = %v, want a BuildError", err)
		}
	})
}

// TestValidate: Trainer v2.3's rules.
func TestValidate(t *testing.T) {
	withInstaller := fluxRuntime(1, nil)
	withInstaller.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "flux-installer", Image: "x"}}
	cases := map[string]struct {
		job     *trainer.TrainJob
		runtime *trainer.TrainingRuntimeSpec
		want    []string
	}{
		"valid":                     {job: trainertesting.MakeTrainJob("j", "ns").NumProcPerNode(1).Obj(), runtime: fluxRuntime(1, nil)},
		"TrainJob numProcPerNode 0": {job: trainertesting.MakeTrainJob("j", "ns").NumProcPerNode(0).Obj(), runtime: fluxRuntime(1, nil), want: []string{"spec.trainer.numProcPerNode"}},
		"runtime numProcPerNode 0":  {job: trainertesting.MakeTrainJob("j", "ns").Obj(), runtime: fluxRuntime(0, nil), want: []string{"spec.trainer.numProcPerNode"}},
		"TrainJob's value wins":     {job: trainertesting.MakeTrainJob("j", "ns").NumProcPerNode(2).Obj(), runtime: fluxRuntime(0, nil)},
		"reserved init container":   {job: trainertesting.MakeTrainJob("j", "ns").Obj(), runtime: withInstaller, want: []string{"spec.runtimeRef"}},
		"not a Flux runtime":        {job: trainertesting.MakeTrainJob("j", "ns").NumProcPerNode(0).Obj(), runtime: trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t")).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := plugin.NewInfo(tc.job, tc.runtime)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range (Flux{}).Validate(info, nil, tc.job) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNotFlux: the plugin leaves other runtimes alone.
func TestNotFlux(t *testing.T) {
	job := trainertesting.MakeTrainJob("j", "ns").Obj()
	info, err := plugin.NewInfo(job, trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("t")).Obj())
	if err != nil {
		t.Fatal(err)
	}
	if err := (Flux{}).EnforceMLPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	comps, err := (Flux{}).Build(context.Background(), fake.NewClientBuilder().Build(), info, job)
	if err != nil || len(comps) != 0 || info.TrainerCommand != nil || len(info.PodSets[0].ExtraInitContainers) != 0 {
		t.Errorf("a torch runtime got Flux's: components %d (%v), command %q", len(comps), err, info.TrainerCommand)
	}
}

// TestNoTrainerStep: a Flux runtime without a trainer step is a build error.
func TestNoTrainerStep(t *testing.T) {
	job := trainertesting.MakeTrainJob("j", "ns").Obj()
	spec := trainertesting.MakeRuntimeSpec().Flux().ReplicatedJob(trainertesting.InitializerJobs()...).Obj()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Flux{}).EnforceMLPolicy(info, job); !plugin.IsBuildError(err) {
		t.Errorf("err = %v, want a BuildError", err)
	}
}

// TestSecretCreatedOnce: the Secret is built only while it does not exist
// (a metadata-only read), and a failed read is an error, not a new key.
func TestSecretCreatedOnce(t *testing.T) {
	job := lammpsJob().Obj()
	existingSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "lammps-flux-curve", Namespace: "hpc"}}
	var kinds []schema.GroupVersionKind
	recordGets := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
			return fmt.Errorf("a full read of %T", obj)
		}
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind())
		return c.Get(ctx, key, obj, opts...)
	}}

	b := build(t, job, fluxRuntime(1, nil), fake.NewClientBuilder().WithInterceptorFuncs(recordGets).Build())
	if b.secret == nil {
		t.Fatal("no Secret while none exists")
	}
	if diff := cmp.Diff([]schema.GroupVersionKind{{Version: "v1", Kind: "Secret"}}, kinds); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}

	b = build(t, job, fluxRuntime(1, nil), fake.NewClientBuilder().WithObjects(existingSecret).WithInterceptorFuncs(recordGets).Build())
	if b.secret != nil || len(b.comps) != 1 {
		t.Errorf("the existing Secret was built again (%d components)", len(b.comps))
	}

	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewServiceUnavailable("down")
	}}).Build()
	info, err := plugin.NewInfo(job, fluxRuntime(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := (Flux{}).EnforceMLPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	if _, err := (Flux{}).Build(context.Background(), failing, info, job); !apierrors.IsServiceUnavailable(errors.Unwrap(err)) {
		t.Errorf("err = %v, want the read's error", err)
	}
}
