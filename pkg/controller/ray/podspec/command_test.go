package podspec

import (
	"maps"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func TestGenerateRayStartCommand(t *testing.T) {
	limits := func(pairs ...string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: raytesting.Resources(pairs...)}
	}
	tests := []struct {
		name      string
		nodeType  rayv1.RayNodeType
		params    map[string]string
		resources corev1.ResourceRequirements
		want      string
	}{
		{
			name:     "head without params",
			nodeType: rayv1.HeadNode,
			want:     "ray start --head",
		},
		{
			name:     "flags are sorted and switches have no value",
			nodeType: rayv1.WorkerNode,
			params:   map[string]string{"num-cpus": "2", "block": "true", "address": "h:6379"},
			want:     "ray start --address=h:6379 --block --num-cpus=2",
		},
		{
			name:     "a false switch is left out, any case",
			nodeType: rayv1.WorkerNode,
			params:   map[string]string{"disable-usage-stats": "False", "block": "TRUE"},
			want:     "ray start --block",
		},
		{
			name:     "flags that take an explicit boolean keep false",
			nodeType: rayv1.HeadNode,
			params:   map[string]string{"log-color": "false", "include-dashboard": "false", "include-log-monitor": "true"},
			want:     "ray start --head --include-dashboard=false --include-log-monitor=true --log-color=false",
		},
		{
			name:      "cpu and memory limits become flags, cpu rounded up",
			nodeType:  rayv1.WorkerNode,
			resources: limits("cpu", "500m", "memory", "1Gi"),
			want:      "ray start --memory=1073741824 --num-cpus=1",
		},
		{
			name:      "cpu falls back to the request when there is no limit",
			nodeType:  rayv1.WorkerNode,
			resources: corev1.ResourceRequirements{Requests: raytesting.Resources("cpu", "3", "memory", "1Gi")},
			want:      "ray start --num-cpus=3",
		},
		{
			name:      "user params win over container resources",
			nodeType:  rayv1.WorkerNode,
			params:    map[string]string{"num-cpus": "0", "memory": "100", "num-gpus": "0"},
			resources: limits("cpu", "4", "memory", "1Gi", "nvidia.com/gpu", "2"),
			want:      "ray start --memory=100 --num-cpus=0 --num-gpus=0",
		},
		{
			name:      "nvidia gpu",
			nodeType:  rayv1.WorkerNode,
			resources: limits("nvidia.com/gpu", "2"),
			want:      "ray start --num-gpus=2",
		},
		{
			name:      "nvidia MIG slice counts as a gpu",
			nodeType:  rayv1.WorkerNode,
			resources: limits("nvidia.com/mig-1g.5gb", "1"),
			want:      "ray start --num-gpus=1",
		},
		{
			name:      "zero gpus are ignored",
			nodeType:  rayv1.WorkerNode,
			resources: limits("nvidia.com/gpu", "0"),
			want:      "ray start",
		},
		{
			name:      "tpu becomes a quoted resources JSON",
			nodeType:  rayv1.WorkerNode,
			resources: limits("google.com/tpu", "4"),
			want:      `ray start --resources='{"TPU":4}'`,
		},
		{
			name:      "neuron cores are merged into user custom resources",
			nodeType:  rayv1.WorkerNode,
			params:    map[string]string{"resources": `'{"custom":1.5}'`},
			resources: limits("aws.amazon.com/neuroncore", "2"),
			want:      `ray start --resources='{"custom":1.5,"neuron_cores":2}'`,
		},
		{
			name:      "a custom accelerator the user already declared is kept",
			nodeType:  rayv1.WorkerNode,
			params:    map[string]string{"resources": `'{"TPU": 8}'`},
			resources: limits("google.com/tpu", "4"),
			want:      `ray start --resources='{"TPU": 8}'`,
		},
		{
			name:      "only the first custom accelerator (by name) is passed",
			nodeType:  rayv1.WorkerNode,
			resources: limits("google.com/tpu", "4", "aws.amazon.com/neuroncore", "2"),
			want:      `ray start --resources='{"neuron_cores":2}'`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.params)
			got := GenerateRayStartCommand(tc.nodeType, tc.params, tc.resources)
			if got != tc.want {
				t.Errorf("command = %q, want %q", got, tc.want)
			}
			if diff := cmp.Diff(before, tc.params); diff != "" {
				t.Errorf("params were modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCompleteRayStartParams(t *testing.T) {
	tests := []struct {
		name      string
		nodeType  rayv1.RayNodeType
		params    map[string]string
		resources map[string]string
		labels    map[string]string
		want      map[string]string
	}{
		{
			name:     "head defaults",
			nodeType: rayv1.HeadNode,
			want: map[string]string{
				"dashboard-host": "0.0.0.0", "metrics-export-port": "8080", "block": "true", "dashboard-agent-listen-port": "52365",
			},
		},
		{
			name:     "worker gets the head address",
			nodeType: rayv1.WorkerNode,
			want: map[string]string{
				"address": "rc-head-svc.ns.svc.cluster.local:6379", "metrics-export-port": "8080", "block": "true", "dashboard-agent-listen-port": "52365",
			},
		},
		{
			name:     "user values win except block",
			nodeType: rayv1.WorkerNode,
			params: map[string]string{
				"address": "elsewhere:1", "metrics-export-port": "9000", "block": "false", "dashboard-agent-listen-port": "1234",
			},
			want: map[string]string{
				"address": "elsewhere:1", "metrics-export-port": "9000", "block": "true", "dashboard-agent-listen-port": "1234",
			},
		},
		{
			name:      "group resources override the same rayStartParams",
			nodeType:  rayv1.HeadNode,
			params:    map[string]string{"num-cpus": "8", "resources": `'{"old":1}'`, "dashboard-host": "localhost"},
			resources: map[string]string{"CPU": "2", "memory": "2Gi", "nvidia.com/gpu": "1", "custom": "500m", "TPU": "4"},
			want: map[string]string{
				"num-cpus": "2", "memory": "2147483648", "num-gpus": "1", "resources": `'{"TPU":4,"custom":0.5}'`,
				"dashboard-host": "localhost", "metrics-export-port": "8080", "block": "true", "dashboard-agent-listen-port": "52365",
			},
		},
		{
			name:     "group labels become sorted --labels",
			nodeType: rayv1.HeadNode,
			params:   map[string]string{"labels": "stale=1"},
			labels:   map[string]string{"zone": "a", "accelerator": "h100"},
			want: map[string]string{
				"labels": "accelerator=h100,zone=a", "dashboard-host": "0.0.0.0", "metrics-export-port": "8080", "block": "true", "dashboard-agent-listen-port": "52365",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.params)
			got := completeRayStartParams(tc.nodeType, tc.params, tc.resources, tc.labels, "rc-head-svc.ns.svc.cluster.local:6379")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.params); diff != "" {
				t.Errorf("user params were modified:\n%s", diff)
			}
		})
	}
}

func TestIsGPUResource(t *testing.T) {
	tests := map[string]bool{
		"nvidia.com/gpu":         true,
		"amd.com/gpu":            true,
		"nvidia.com/mig-2g.32gb": true,
		"nvidia.com/mig-2g":      false,
		"nvidia.com/mig-xg.1gb":  false,
		"google.com/tpu":         false,
		"cpu":                    false,
	}
	for name, want := range tests {
		if got := IsGPUResource(name); got != want {
			t.Errorf("IsGPUResource(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestGroupResourcesStayOneShellWord: a custom resource named with a
// single quote (or holding one) does not end the --resources word early,
// and a quantity beyond float64 leaves the others in place instead of an
// empty value. bash -c echoes what ray start would receive.
func TestGroupResourcesStayOneShellWord(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: the quoting is checked against the shell the Ray container runs")
	}
	cases := map[string]struct {
		resources map[string]string
		want      string
	}{
		"quote in a name": {map[string]string{"it's": "1", "TPU": "2"}, `{"TPU":2,"it's":1}`},
		"beyond float64":  {map[string]string{"huge": "1e400", "small": "3"}, `{"small":3}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := map[string]string{}
			applyGroupResources(p, tc.resources)
			out, err := exec.Command(bash, "-c", "printf '%s' "+p[paramResources]).Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			if string(out) != tc.want {
				t.Errorf("--resources=%s reaches ray start as %q, want %q", p[paramResources], out, tc.want)
			}
		})
	}
}
