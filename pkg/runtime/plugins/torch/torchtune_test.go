package torch

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// torchTuneRuntime is the trainer step of Trainer v2.3's
// torchtune-llama3.2-1b runtime (manifests/base/runtimes/torchtune).
func torchTuneRuntime() *trainer.TrainingRuntimeSpec {
	node := trainertesting.MakeContainer(trainer.TrainerNodeName, "ghcr.io/kubeflow/trainer/torchtune-trainer:v2.3.0").
		Command("tune", "run", "--rdzv_endpoint=localhost:29500", "full_finetune_distributed", "--config", "llama3_2/1B_full",
			"dataset=torchtune.datasets.instruct_dataset", "dataset.source=parquet", "dataset.data_dir=/workspace/dataset/data",
			"output_dir=/workspace/output", "tokenizer.path=/workspace/model/original/tokenizer.model",
			"checkpointer.checkpoint_dir=/workspace/model").
		Resources(nil, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}).Obj()
	return trainertesting.MakeRuntimeSpec().Torch(nil).
		ReplicatedJob(trainertesting.ReplicatedJob(trainer.TrainerNodeName, trainer.AncestorTrainer, node)).Obj()
}

func gpus(n string) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
}

var runtimePaths = []string{"output_dir=/workspace/output", "tokenizer.path=/workspace/model/original/tokenizer.model", "checkpointer.checkpoint_dir=/workspace/model"}

// TestTorchTuneCommand: `tune run` is completed with the recipe and config
// for the job's shape, the rendezvous endpoint when it is distributed, and
// the runtime's own paths; PET_MASTER_* are left out (torchtune rendezvous
// by the command), PET_NNODES and PET_NPROC_PER_NODE stay.
func TestTorchTuneCommand(t *testing.T) {
	rdzv := "--rdzv_endpoint=tune-node-0-0.tune:29500"
	job := func(runtime string) *trainertesting.TrainJobWrapper {
		return trainertesting.MakeTrainJob("tune", "default").RuntimeRef(trainer.ClusterTrainingRuntimeKind, runtime).Command("tune", "run")
	}
	cases := map[string]struct {
		job  *trainertesting.TrainJobWrapper
		want []string
	}{
		"the runtime's 2 GPUs: distributed full fine-tuning": {
			job:  job("torchtune-llama3.2-1b").Args("dtype=fp16", "epochs=10"),
			want: []string{rdzv, "full_finetune_distributed", "--config", "llama3_2/1B_full"},
		},
		"one GPU: single device": {
			job:  job("torchtune-llama3.2-1b").ResourcesPerNode(nil, gpus("1")),
			want: []string{"full_finetune_single_device", "--config", "llama3_2/1B_full_single_device"},
		},
		"one process: single device": {
			job:  job("torchtune-llama3.2-3b").NumProcPerNode(1),
			want: []string{"full_finetune_single_device", "--config", "llama3_2/3B_full_single_device"},
		},
		"LoRA on 4 GPUs": {
			job:  job("torchtune-llama3.2-1b").ResourcesPerNode(nil, gpus("4")).Args("model.lora_attn_modules=[q_proj,v_proj]"),
			want: []string{rdzv, "lora_finetune_distributed", "--config", "llama3_2/1B_lora"},
		},
		"LoRA on one GPU": {
			job:  job("torchtune-llama3.2-1b").ResourcesPerNode(nil, gpus("1")).Args("model.lora_attn_modules=[q_proj,v_proj]"),
			want: []string{"lora_finetune_single_device", "--config", "llama3_2/1B_lora_single_device"},
		},
		"QLoRA on one GPU": {
			job:  job("torchtune-llama3.2-1b").ResourcesPerNode(nil, gpus("1")).Args("model.lora_attn_modules=[q_proj]", "model.quantize_base=True"),
			want: []string{"lora_finetune_single_device", "--config", "llama3_2/1B_qlora_single_device"},
		},
		"DoRA turns QLoRA off": {
			job:  job("torchtune-llama3.2-1b").ResourcesPerNode(nil, gpus("1")).Args("model.lora_attn_modules=[q_proj]", "model.quantize_base=True", "model.use_dora=True"),
			want: []string{"lora_finetune_single_device", "--config", "llama3_2/1B_lora_single_device"},
		},
		"two nodes of the 70B model": {
			job:  job("torchtune-llama3.3-70b").NumNodes(2),
			want: []string{rdzv, "full_finetune_distributed", "--config", "llama3_3/70B_full_multinode"},
		},
		"a chart name prefix keeps the model": {
			job:  job("gantry-torchtune-qwen2.5-1.5b").ResourcesPerNode(nil, gpus("1")),
			want: []string{"full_finetune_single_device", "--config", "qwen2_5/1.5B_full_single_device"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info := enforce(t, tc.job.Obj(), torchTuneRuntime())
			want := append(append([]string{"tune", "run"}, tc.want...), runtimePaths...)
			if diff := cmp.Diff(want, info.TrainerCommand); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			node := info.FindPodSetByName(trainer.TrainerNodeName).FindContainer(trainer.TrainerNodeName)
			for _, env := range []string{trainer.TorchEnvMasterAddr, trainer.TorchEnvMasterPort} {
				if v := envValue(node, env); v != "<unset>" {
					t.Errorf("%s=%s on a torchtune job", env, v)
				}
			}
			if v := envValue(node, trainer.TorchEnvNumNodes); v == "<unset>" {
				t.Errorf("%s unset", trainer.TorchEnvNumNodes)
			}
		})
	}

	// Any other command is left to the TrainJob, with PET_MASTER_* set.
	info := enforce(t, job("torchtune-llama3.2-1b").Command("tune", "run", "--help").Obj(), torchTuneRuntime())
	if info.TrainerCommand != nil {
		t.Errorf("command %v for a job that is not `tune run`", info.TrainerCommand)
	}
	node := info.FindPodSetByName(trainer.TrainerNodeName).FindContainer(trainer.TrainerNodeName)
	if envValue(node, trainer.TorchEnvMasterAddr) != "tune-node-0-0.tune" {
		t.Errorf("PET_MASTER_ADDR %q", envValue(node, trainer.TorchEnvMasterAddr))
	}
}

func TestTorchTuneValidation(t *testing.T) {
	job := func(runtime string) *trainertesting.TrainJobWrapper {
		return trainertesting.MakeTrainJob("tune", "default").RuntimeRef(trainer.ClusterTrainingRuntimeKind, runtime).Command("tune", "run")
	}
	cases := map[string]struct {
		job  *trainertesting.TrainJobWrapper
		want []string // substrings of the errors, in order; none: valid
	}{
		"a supported model":               {job: job("torchtune-llama3.2-1b")},
		"not `tune run`: not checked":     {job: job("my-runtime").Command("python", "train.py")},
		"an unknown model":                {job: job("torchtune-llama3.1-70b"), want: []string{"spec.runtimeRef.name"}},
		"a runtime not named for a model": {job: job("torch-distributed"), want: []string{"spec.runtimeRef.name"}},
		"two nodes of a small model":      {job: job("torchtune-llama3.2-3b").NumNodes(2), want: []string{"spec.trainer.numNodes"}},
		"QLoRA for Qwen": {
			job:  job("torchtune-qwen2.5-1.5b").ResourcesPerNode(nil, gpus("1")).Args("model.quantize_base=True"),
			want: []string{"QLoRA is not supported"},
		},
		"QLoRA on two GPUs of a small Llama": {
			job:  job("torchtune-llama3.2-1b").Args("model.quantize_base=True"),
			want: []string{"spec.trainer.numProcPerNode", "spec.trainer.resourcesPerNode"},
		},
		"LoRA across nodes": {
			job:  job("torchtune-llama3.3-70b").NumNodes(2).Args("model.lora_attn_modules=[q_proj]"),
			want: []string{"LoRA fine-tuning is not supported across nodes"},
		},
		"the runtime's paths": {
			job:  job("torchtune-llama3.2-1b").Args("epochs=1", "output_dir=/tmp/x"),
			want: []string{`spec.trainer.args[1]`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := tc.job.Obj()
			info, err := plugin.NewInfo(j, torchTuneRuntime())
			if err != nil {
				t.Fatal(err)
			}
			errs := (Torch{}).Validate(info, nil, j)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d containing %q", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}
