package torch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// TorchTune fine-tuning (Kubeflow Trainer v2.3's LLM runtimes, KEP-2401):
// a TrainJob whose spec.trainer.command is exactly ["tune", "run"] on a
// torch runtime named torchtune-<model>-<size> gets the rest of its command
// from the runtime: the recipe and config its node count, process count,
// GPUs and LoRA/QLoRA arguments call for, the rendezvous endpoint when it
// is distributed, and the runtime's own output, tokenizer and checkpoint
// paths. spec.trainer.args carry the user's config overrides.
var torchTuneEntrypoint = []string{"tune", "run"}

// Recipes and config-name suffixes (torchtune's recipe registry).
const (
	recipeFullSingleDevice = "full_finetune_single_device"
	recipeFullDistributed  = "full_finetune_distributed"
	recipeLoRASingleDevice = "lora_finetune_single_device"
	recipeLoRADistributed  = "lora_finetune_distributed"

	suffixFullSingleDevice  = "_full_single_device"
	suffixFullMultiDevices  = "_full"
	suffixFullMultiNodes    = "_full_multinode"
	suffixLoRASingleDevice  = "_lora_single_device"
	suffixQLoRASingleDevice = "_qlora_single_device"
	suffixLoRADistributed   = "_lora"
	suffixQLoRADistributed  = "_qlora"
)

// The models the shipped torchtune runtimes fine-tune, as torchtune names
// their configs' directories.
const (
	modelLlama3_2_1B  = "llama3_2/1B"
	modelLlama3_2_3B  = "llama3_2/3B"
	modelLlama3_3_70B = "llama3_3/70B"
	modelQwen2_5_1_5B = "qwen2_5/1.5B"
)

var torchTuneModels = sets.New(modelLlama3_2_1B, modelLlama3_2_3B, modelLlama3_3_70B, modelQwen2_5_1_5B)

// Config keys: the LoRA/QLoRA/DoRA switches read from the arguments, and
// the paths the runtime owns (a TrainJob may not override them).
const (
	keyLoRAAttnModules = "model.lora_attn_modules"
	keyQuantizeBase    = "model.quantize_base"
	keyUseDoRA         = "model.use_dora"
)

var torchTuneRuntimeKeys = sets.New("output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file")

// isTorchTune reports a TrainJob that asks for the torchtune command.
func isTorchTune(job *trainer.TrainJob) bool {
	return job.Spec.Trainer != nil && slices.Equal(job.Spec.Trainer.Command, torchTuneEntrypoint)
}

// torchTuneModel is the model a runtime named [<prefix>-]torchtune-<model>-<size>
// fine-tunes, e.g. torchtune-llama3.2-1b → llama3_2/1B; "" for any other
// name. Upstream splits the whole name on "-", so a chart name prefix
// (trainingRuntimes.namePrefix) would hide the model; Gantry reads what
// follows "torchtune-".
func torchTuneModel(runtimeName string) string {
	_, rest, found := strings.Cut(runtimeName, "torchtune-")
	if !found {
		return ""
	}
	model, size, ok := strings.Cut(rest, "-")
	if !ok || strings.Contains(size, "-") {
		return ""
	}
	return strings.ReplaceAll(model, ".", "_") + "/" + strings.ToUpper(size)
}

// gpusPerNode is the node's GPU count: a resource whose name contains
// "gpu", from the requests, else from the limits. With several such
// resources the first by name counts (upstream takes map order).
func gpusPerNode(res corev1.ResourceRequirements) int64 {
	for _, list := range []corev1.ResourceList{res.Requests, res.Limits} {
		names := make([]string, 0, len(list))
		for name := range list {
			if strings.Contains(strings.ToLower(string(name)), "gpu") {
				names = append(names, string(name))
			}
		}
		slices.Sort(names)
		for _, name := range names {
			q := list[corev1.ResourceName(name)]
			if n := q.Value(); n > 0 {
				return n
			}
		}
	}
	return 0
}

// argEnabled reports an argument key=value whose key contains key and whose
// value is a Python true.
func argEnabled(args []string, key string) bool {
	for _, arg := range args {
		name, value, ok := strings.Cut(arg, "=")
		if ok && strings.Contains(name, key) && strings.EqualFold(strings.TrimSpace(value), "true") {
			return true
		}
	}
	return false
}

func loraRequested(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, keyLoRAAttnModules) })
}

// qloraRequested: a quantized base, unless DoRA is on.
func qloraRequested(args []string) bool {
	return !argEnabled(args, keyUseDoRA) && argEnabled(args, keyQuantizeBase)
}

// procs is PET_NPROC_PER_NODE as torchtune's choice sees it: a number, or
// "auto" (GPUs, counted by torchrun).
type procs struct {
	n    int64
	auto bool
}

func parseProcs(s string) procs {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return procs{n: n}
	}
	return procs{auto: true}
}

// recipeAndConfig picks torchtune's recipe and config for the job's shape,
// as Trainer v2.3 does: one process (or one GPU) on one node is a single
// device run, LoRA/QLoRA arguments pick the LoRA recipes on one node, and
// several nodes always run the full multi-node config.
func recipeAndConfig(model string, nodes int32, p procs, gpus int64, args []string) (recipe, config string) {
	recipe, suffix := recipeFullDistributed, suffixFullMultiDevices
	switch {
	case nodes == 1 && ((!p.auto && p.n == 1) || gpus == 1):
		switch {
		case qloraRequested(args):
			recipe, suffix = recipeLoRASingleDevice, suffixQLoRASingleDevice
		case loraRequested(args):
			recipe, suffix = recipeLoRASingleDevice, suffixLoRASingleDevice
		default:
			recipe, suffix = recipeFullSingleDevice, suffixFullSingleDevice
		}
	case nodes == 1 && qloraRequested(args):
		recipe, suffix = recipeLoRADistributed, suffixQLoRADistributed
	case nodes == 1 && loraRequested(args):
		recipe, suffix = recipeLoRADistributed, suffixLoRADistributed
	case nodes > 1:
		suffix = suffixFullMultiNodes
	}
	return recipe, model + suffix
}

// runtimeOverrides are the runtime's own path settings, from the command of
// its trainer step's node container.
func runtimeOverrides(info *plugin.Info) []string {
	var out []string
	for i, rj := range info.Template.ReplicatedJobs {
		if info.PodSets[i].Ancestor != trainer.AncestorTrainer {
			continue
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name != trainer.TrainerNodeName {
				continue
			}
			for _, item := range c.Command {
				if key, _, _ := strings.Cut(item, "="); torchTuneRuntimeKeys.Has(key) {
					out = append(out, item)
				}
			}
		}
	}
	return out
}

// torchTuneCommand is the trainer's full command for a torchtune job.
func torchTuneCommand(info *plugin.Info, job *trainer.TrainJob, ps *plugin.PodSet, nproc string, res corev1.ResourceRequirements) []string {
	p, gpus := parseProcs(nproc), gpusPerNode(res)
	cmd := slices.Clone(torchTuneEntrypoint)
	if ps.Count > 1 || (!p.auto && p.n > 1) || (p.auto && gpus > 1) {
		cmd = append(cmd, fmt.Sprintf("--rdzv_endpoint=%s:%d", info.PodHostname(job.Name, ps.Name, 0, 0), trainer.ContainerTrainerPort))
	}
	recipe, config := recipeAndConfig(torchTuneModel(job.Spec.RuntimeRef.Name), ps.Count, p, gpus, job.Spec.Trainer.Args)
	cmd = append(cmd, recipe, "--config", config)
	return append(cmd, runtimeOverrides(info)...)
}

// validateTorchTune checks a torchtune TrainJob the way Trainer v2.3's
// webhook does: a supported model, one node except for the 70B model, no
// QLoRA for Qwen, QLoRA on the small Llama models only on one GPU, no LoRA
// across nodes, and none of the runtime's own paths in the arguments.
func validateTorchTune(info *plugin.Info, job *trainer.TrainJob) field.ErrorList {
	var errs field.ErrorList
	t := job.Spec.Trainer
	trainerPath := field.NewPath("spec", "trainer")
	refPath := field.NewPath("spec", "runtimeRef", "name")
	model := torchTuneModel(job.Spec.RuntimeRef.Name)
	if !torchTuneModels.Has(model) {
		errs = append(errs, field.Invalid(refPath, job.Spec.RuntimeRef.Name,
			fmt.Sprintf("must name a torchtune runtime of a supported model (%s), got model %q", strings.Join(sets.List(torchTuneModels), ", "), model)))
	}
	nodes := ptr.Deref(t.NumNodes, 1)
	if nodes > 1 && model != modelLlama3_3_70B {
		errs = append(errs, field.Invalid(trainerPath.Child("numNodes"), nodes, fmt.Sprintf("must be 1 for the %s model", model)))
	}
	nproc := "auto"
	if t.NumProcPerNode != nil {
		nproc = strconv.Itoa(int(*t.NumProcPerNode))
	}
	res := corev1.ResourceRequirements{}
	if _, node, err := info.TrainerNode("torch"); err == nil {
		res = resourcesPerNode(job, node.Resources)
	}
	_, config := recipeAndConfig(model, nodes, parseProcs(nproc), gpusPerNode(res), t.Args)
	if strings.Contains(config, suffixQLoRADistributed) {
		if model == modelQwen2_5_1_5B {
			errs = append(errs, field.Invalid(refPath, job.Spec.RuntimeRef.Name, fmt.Sprintf("QLoRA is not supported for the %s model", model)))
		}
		if !strings.Contains(config, suffixQLoRASingleDevice) && (model == modelLlama3_2_1B || model == modelLlama3_2_3B) {
			errs = append(errs,
				field.Invalid(trainerPath.Child("numProcPerNode"), nproc, fmt.Sprintf("must be auto or 1 for the %s model with QLoRA", model)),
				field.Invalid(trainerPath.Child("resourcesPerNode"), t.ResourcesPerNode, fmt.Sprintf("must ask for exactly 1 GPU for the %s model with QLoRA", model)))
		}
	}
	if nodes > 1 && (loraRequested(t.Args) || qloraRequested(t.Args)) {
		errs = append(errs, field.Invalid(trainerPath.Child("numNodes"), nodes, "LoRA fine-tuning is not supported across nodes by torchtune"))
	}
	for i, arg := range t.Args {
		if key, _, _ := strings.Cut(arg, "="); torchTuneRuntimeKeys.Has(key) {
			errs = append(errs, field.Invalid(trainerPath.Child("args").Index(i), arg,
				fmt.Sprintf("must not set %q: the runtime sets it", key)))
		}
	}
	return errs
}
