package torch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func elasticSpec(maxRestarts *int32) *trainer.TrainingRuntimeSpec {
	return trainertesting.MakeRuntimeSpec().NumNodes(2).Torch(nil).TorchElastic(1, 4, maxRestarts).
		ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", trainertesting.MakeContainer("node", "t:1").Obj())).Obj()
}

func TestElasticEnv(t *testing.T) {
	job := trainertesting.MakeTrainJob("elastic", "team-a").NumNodes(3).NumProcPerNode(2).Image("img").Obj()
	job.UID = types.UID("5b1c-uid")
	cases := map[string]struct {
		plugin      Torch
		maxRestarts *int32
		want        []corev1.EnvVar
	}{
		"default cluster domain, no restart budget": {
			plugin: Torch{},
			want: []corev1.EnvVar{
				{Name: "PET_NNODES", Value: "1:4"},
				{Name: "PET_NPROC_PER_NODE", Value: "2"},
				{Name: "PET_RDZV_BACKEND", Value: "c10d"},
				{Name: "PET_RDZV_ENDPOINT", Value: "elastic-node-0-0.elastic.team-a.svc.cluster.local:29500"},
				{Name: "PET_RDZV_ID", Value: "5b1c-uid"},
				{Name: "PET_MASTER_ADDR", Value: "elastic-node-0-0.elastic"},
				{Name: "PET_MASTER_PORT", Value: "29500"},
			},
		},
		"own cluster domain and restarts": {
			plugin:      Torch{ClusterDomain: "corp.example"},
			maxRestarts: ptr.To[int32](5),
			want: []corev1.EnvVar{
				{Name: "PET_NNODES", Value: "1:4"},
				{Name: "PET_NPROC_PER_NODE", Value: "2"},
				{Name: "PET_RDZV_BACKEND", Value: "c10d"},
				{Name: "PET_RDZV_ENDPOINT", Value: "elastic-node-0-0.elastic.team-a.svc.corp.example:29500"},
				{Name: "PET_RDZV_ID", Value: "5b1c-uid"},
				{Name: "PET_MAX_RESTARTS", Value: "5"},
				{Name: "PET_MASTER_ADDR", Value: "elastic-node-0-0.elastic"},
				{Name: "PET_MASTER_PORT", Value: "29500"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := plugin.NewInfo(job, elasticSpec(tc.maxRestarts))
			if err != nil {
				t.Fatal(err)
			}
			if errs := tc.plugin.Validate(info, nil, job); len(errs) > 0 {
				t.Fatalf("Validate: %v", errs)
			}
			if err := tc.plugin.EnforceMLPolicy(info, job); err != nil {
				t.Fatal(err)
			}
			ps := info.TrainerPodSet()
			if ps.Count != 3 {
				t.Errorf("nodes = %d, want the TrainJob's 3", ps.Count)
			}
			if diff := cmp.Diff(tc.want, ps.FindContainer("node").Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

// A static torch job keeps its node rank and count: the elastic variables
// appear only with an elastic policy.
func TestStaticJobHasNoRendezvousEnv(t *testing.T) {
	job := trainertesting.MakeTrainJob("static", "default").NumNodes(2).Image("img").Obj()
	spec := trainertesting.MakeRuntimeSpec().Torch(ptr.To(intstr.FromInt32(1))).
		ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", trainertesting.MakeContainer("node", "t:1").Obj())).Obj()
	info := enforce(t, job, spec)
	node := info.TrainerPodSet().FindContainer("node")
	if got := envValue(node, "PET_NNODES"); got != "2" {
		t.Errorf("PET_NNODES = %q, want 2", got)
	}
	if got := envValue(node, "PET_RDZV_BACKEND"); got != "<unset>" {
		t.Errorf("PET_RDZV_BACKEND = %q on a static job", got)
	}
	if got := envValue(node, "PET_NODE_RANK"); got == "<unset>" {
		t.Errorf("PET_NODE_RANK missing on a static job")
	}
}

func TestValidateElastic(t *testing.T) {
	cases := map[string]struct {
		plugin Torch
		job    *trainertesting.TrainJobWrapper
		want   string // substring of the error; empty: valid
	}{
		"within the bounds":          {plugin: Torch{}, job: trainertesting.MakeTrainJob("j", "default").NumNodes(4).Image("i")},
		"runtime's numNodes":         {plugin: Torch{}, job: trainertesting.MakeTrainJob("j", "default").Image("i")},
		"above maxNodes":             {plugin: Torch{}, job: trainertesting.MakeTrainJob("j", "default").NumNodes(5).Image("i"), want: "between the runtime's elasticPolicy.minNodes (1) and maxNodes (4)"},
		"rendezvous variable set":    {plugin: Torch{}, job: trainertesting.MakeTrainJob("j", "default").Env("PET_RDZV_ENDPOINT", "x:1"), want: "elastic rendezvous variables"},
		"torchtune on elastic":       {plugin: Torch{}, job: trainertesting.MakeTrainJob("j", "default").Command(torchTuneEntrypoint...), want: "torchtune"},
		"static reserved still held": {plugin: Torch{}, job: trainertesting.MakeTrainJob("j", "default").Env("PET_NNODES", "9"), want: "torchrun variables"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := tc.job.Obj()
			info, err := plugin.NewInfo(job, elasticSpec(nil))
			if err != nil {
				t.Fatal(err)
			}
			errs := tc.plugin.Validate(info, nil, job)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && !strings.Contains(fmt.Sprint(errs), tc.want):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
