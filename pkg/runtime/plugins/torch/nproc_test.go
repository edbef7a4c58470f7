package torch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// TestNumProcPerNodeTrainerV23 pins PET_NPROC_PER_NODE to what Trainer
// v2.3.0 sets for the same TrainJob and runtime (no legacy runtime
// numProcPerNode, which v2.3 does not have). The first block carries the
// inputs and expected values of upstream's torch plugin unit tests and of
// its runtime-core and controller tests; the second the YAML examples
// shipped with v2.3.0; the third edge cases of the same rule.
func TestNumProcPerNodeTrainerV23(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	type res struct{ requests, limits corev1.ResourceList }
	cases := map[string]struct {
		runtimeNode *res // resources of the runtime's node container
		jobRes      *res // spec.trainer.resourcesPerNode
		jobNProc    *int32
		numNodes    int32
		want        string
	}{
		// Upstream unit-test tables (resourcesPerNode given as requests).
		"no resources anywhere":                 {want: "1"},
		"numNodes only":                         {numNodes: 2, want: "1"},
		"resourcesPerNode without CPU":          {jobRes: &res{}, want: "1"},
		"CPU request 4":                         {jobRes: &res{requests: list("cpu", "4")}, want: "4"},
		"CPU request 2":                         {jobRes: &res{requests: list("cpu", "2")}, want: "2"},
		"CPU request 3":                         {jobRes: &res{requests: list("cpu", "3")}, want: "3"},
		"CPU request 1 (core and controller)":   {jobRes: &res{requests: list("cpu", "1", "memory", "4Gi")}, want: "1"},
		"CPU 2.5 rounds up":                     {jobRes: &res{requests: list("cpu", "2.5")}, want: "3"},
		"CPU 2500m rounds up":                   {jobRes: &res{requests: list("cpu", "2500m")}, want: "3"},
		"CPU 0.7 rounds up to 1":                {jobRes: &res{requests: list("cpu", "0.7")}, want: "1"},
		"CPU 3.7 rounds up":                     {jobRes: &res{requests: list("cpu", "3.7")}, want: "4"},
		"GPU request stays auto":                {jobRes: &res{requests: list("example.com/gpu", "2")}, want: "auto"},
		"CPU and GPU stay auto":                 {jobRes: &res{requests: list("cpu", "6", "example.com/gpu", "2")}, want: "auto"},
		"multi-node multi-GPU stays auto":       {numNodes: 4, jobRes: &res{requests: list("cpu", "8", "memory", "16Gi", "example.com/gpu", "4")}, want: "auto"},
		"explicit numProcPerNode wins":          {jobNProc: ptr32(3), jobRes: &res{requests: list("cpu", "8")}, want: "3"},
		"explicit 1 next to a GPU":              {jobNProc: ptr32(1), jobRes: &res{requests: list("cpu", "8", "example.com/gpu", "1")}, want: "1"},
		"explicit 8 next to 8 GPUs":             {jobNProc: ptr32(8), numNodes: 2, jobRes: &res{requests: list("cpu", "8", "example.com/gpu", "8")}, want: "8"},
		"explicit over the runtime's CPU":       {jobNProc: ptr32(3), runtimeNode: &res{requests: list("cpu", "1")}, want: "3"},
		"TrainJob resources over the runtime's": {runtimeNode: &res{requests: list("cpu", "1")}, jobRes: &res{requests: list("cpu", "1")}, want: "1"},

		// examples/yaml in v2.3.0: 02-runtime-patches, 03-kueue-integration
		// and 05-multi-step ask for 2 CPUs with a limit of 4; 04-volcano 1
		// with a limit of 2; 01-multi-node sets nothing and the
		// torch-distributed runtime's node container has no resources.
		"examples 02/03/05: request 2, limit 4": {jobRes: &res{requests: list("cpu", "2", "memory", "4Gi"), limits: list("cpu", "4", "memory", "8Gi")}, numNodes: 2, want: "2"},
		"example 04: request 1, limit 2":        {jobRes: &res{requests: list("cpu", "1"), limits: list("cpu", "2")}, want: "1"},
		"example 01: torch-distributed, none":   {numNodes: 3, want: "1"},

		// The same rule at its edges.
		"limit only":                           {jobRes: &res{limits: list("cpu", "4")}, want: "4"},
		"zero request falls back to the limit": {jobRes: &res{requests: list("cpu", "0"), limits: list("cpu", "5")}, want: "5"},
		"fractional limit rounds up":           {jobRes: &res{limits: list("cpu", "500m")}, want: "1"},
		"GPU limit only stays auto":            {jobRes: &res{limits: list("nvidia.com/gpu", "1"), requests: list("cpu", "4")}, want: "auto"},
		"zero GPU request, GPU limit":          {jobRes: &res{requests: list("nvidia.com/gpu", "0", "cpu", "4"), limits: list("nvidia.com/gpu", "2")}, want: "auto"},
		"zero GPUs count as none":              {jobRes: &res{requests: list("nvidia.com/gpu", "0", "cpu", "4")}, want: "4"},
		"GPU name matched case-insensitively":  {jobRes: &res{requests: list("amd.com/GPU", "1")}, want: "auto"},
		"runtime request before its limit":     {runtimeNode: &res{requests: list("cpu", "2"), limits: list("cpu", "6")}, want: "2"},
		"runtime limit only":                   {runtimeNode: &res{limits: list("cpu", "6")}, want: "6"},
		"runtime GPUs stay auto":               {runtimeNode: &res{limits: list("nvidia.com/gpu", "2", "cpu", "8")}, want: "auto"},
		// Upstream reads spec.trainer.resourcesPerNode as written, not merged
		// with the runtime's: the runtime's GPUs do not make it auto.
		"TrainJob CPU hides the runtime's GPU":        {runtimeNode: &res{limits: list("nvidia.com/gpu", "2")}, jobRes: &res{requests: list("cpu", "3")}, want: "3"},
		"empty TrainJob resources hide the runtime's": {runtimeNode: &res{requests: list("cpu", "6")}, jobRes: &res{}, want: "1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := trainertesting.MakeContainer("node", "t:1")
			if tc.runtimeNode != nil {
				node.Resources(tc.runtimeNode.requests, tc.runtimeNode.limits)
			}
			spec := trainertesting.MakeRuntimeSpec().Torch(nil).
				ReplicatedJob(trainertesting.ReplicatedJob("node", trainer.AncestorTrainer, node.Obj())).Obj()
			// The PET_* variables go only to a TrainJob with spec.trainer.
			job := trainertesting.MakeTrainJob("test-job", "default").Image("img")
			if tc.jobRes != nil {
				job.ResourcesPerNode(tc.jobRes.requests, tc.jobRes.limits)
			}
			if tc.jobNProc != nil {
				job.NumProcPerNode(*tc.jobNProc)
			}
			if tc.numNodes > 0 {
				job.NumNodes(tc.numNodes)
			}
			info := enforce(t, job.Obj(), spec)
			if got := envValue(info.TrainerPodSet().FindContainer(trainer.TrainerNodeName), trainer.TorchEnvNumProcPerNode); got != tc.want {
				t.Errorf("PET_NPROC_PER_NODE = %q, want %q (Trainer v2.3.0)", got, tc.want)
			}
		})
	}
}

func ptr32(v int32) *int32 { return &v }
