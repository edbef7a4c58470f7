package nodeset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// slurmd must see the pod's size, not the host's: Slinky's image derives
// the node's CPUs and RealMemory from POD_CPUS and POD_MEMORY.
func TestSlurmdEnvCarriesThePodSize(t *testing.T) {
	limits := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	tests := []struct {
		name              string
		pod, container    corev1.ResourceList
		wantCPUs, wantMiB string
	}{
		{"no limits", nil, nil, "0", "0"},
		{"container limits", nil, limits("4", "8Gi"), "4", "8192"},
		{"fractional CPUs round up", nil, limits("2500m", "1G"), "3", "953"},
		{"pod-level limits", limits("8", "16Gi"), nil, "8", "16384"},
		{"the container's limits win where set", limits("8", "16Gi"), limits("2", ""), "2", "16384"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj()
			if tt.pod != nil {
				n.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{Limits: tt.pod}
			}
			n.Spec.Slurmd.Resources.Limits = tt.container
			pod := BuildPod(n, 0, PodInputs{Controller: slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()})
			env := map[string]corev1.EnvVar{}
			for _, c := range pod.Spec.Containers {
				if c.Name == "slurmd" {
					for _, e := range c.Env {
						env[e.Name] = e
					}
				}
			}
			if env["POD_CPUS"].Value != tt.wantCPUs || env["POD_MEMORY"].Value != tt.wantMiB {
				t.Errorf("POD_CPUS=%q POD_MEMORY=%q, want %q and %q", env["POD_CPUS"].Value, env["POD_MEMORY"].Value, tt.wantCPUs, tt.wantMiB)
			}
			topo := env["POD_TOPOLOGY"].ValueFrom
			if topo == nil || topo.FieldRef == nil ||
				topo.FieldRef.FieldPath != "metadata.annotations['"+slinkyv1beta1.AnnotationNodeTopologySpec+"']" {
				t.Errorf("POD_TOPOLOGY = %+v, want the pod's topology annotation", env["POD_TOPOLOGY"])
			}
		})
	}
}
