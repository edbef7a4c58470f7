package plugin

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	resourcehelper "k8s.io/component-helpers/resource"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// PodRequests is what the scheduler reserves for one pod of spec, by
// component-helpers' rule, as Trainer v2.3 computes it: the pod-level
// resources when the spec sets them, otherwise the containers and sidecars,
// or the largest regular init container plus the sidecars started before
// it when that is more; plus the pod overhead.
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	return resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
}

// GPUCount is the GPUs in res: any resource whose name contains "gpu"
// (nvidia.com/gpu, amd.com/gpu), requests first, then limits.
func GPUCount(res corev1.ResourceRequirements) int64 {
	if n := gpuIn(res.Requests); n > 0 {
		return n
	}
	return gpuIn(res.Limits)
}

func gpuIn(list corev1.ResourceList) int64 {
	for name, q := range list {
		if strings.Contains(strings.ToLower(string(name)), "gpu") {
			return q.Value()
		}
	}
	return 0
}

// MultiplyResources returns list times n without touching list.
func MultiplyResources(list corev1.ResourceList, n int32) corev1.ResourceList {
	out := make(corev1.ResourceList, len(list))
	for name, q := range list {
		scaled := q.DeepCopy()
		scaled.Mul(int64(n))
		out[name] = scaled
	}
	return out
}

// AddResources adds src into dst.
func AddResources(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

// resourceRequirementsPatchMeta is the strategic-merge schema upstream
// merges resourcesPerNode with: limits and requests per key, claims by name.
type resourceRequirementsPatchMeta struct {
	Limits   corev1.ResourceList    `json:"limits,omitempty"`
	Requests corev1.ResourceList    `json:"requests,omitempty"`
	Claims   []corev1.ResourceClaim `json:"claims,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
}

// MergeResourceRequirements overlays override onto base as Trainer v2.3.0's
// MergeResourceRequirements (pkg/util/trainingruntime) does, by strategic
// merge: a key of limits or requests that override sets wins, the others
// stay; claims merge by name.
func MergeResourceRequirements(base, override corev1.ResourceRequirements) (corev1.ResourceRequirements, error) {
	src, err := json.Marshal(base)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	patch, err := json.Marshal(override)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	merged, err := strategicpatch.StrategicMergePatch(src, patch, resourceRequirementsPatchMeta{})
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	var out corev1.ResourceRequirements
	if err := json.Unmarshal(merged, &out); err != nil {
		return corev1.ResourceRequirements{}, err
	}
	return out, nil
}

// ResourcesPerNode is what a policy sizes its processes by, as upstream's
// MPI and XGBoost plugins do: the TrainJob's resourcesPerNode exactly as
// written when set (not its merge with the runtime's), otherwise the
// resources of container "node" in the first replicated job named "node"
// or labelled as the trainer step (runtime.ExtractResourcePerNodeFromRuntime).
func ResourcesPerNode(info *Info, trainJob *trainer.TrainJob) corev1.ResourceRequirements {
	if t := trainJob.Spec.Trainer; t != nil && t.ResourcesPerNode != nil {
		return *t.ResourcesPerNode.DeepCopy()
	}
	for i := range info.Template.ReplicatedJobs {
		rJob := &info.Template.ReplicatedJobs[i]
		if rJob.Name != trainer.TrainerNodeName && rJob.Template.Labels[trainer.LabelTrainJobAncestor] != trainer.AncestorTrainer {
			continue
		}
		if c := findContainer(rJob, trainer.TrainerNodeName); c != nil {
			return *c.Resources.DeepCopy()
		}
	}
	return corev1.ResourceRequirements{}
}

func findContainer(rJob *jobsetv1alpha2.ReplicatedJob, name string) *corev1.Container {
	for i := range rJob.Template.Spec.Template.Spec.Containers {
		if c := &rJob.Template.Spec.Template.Spec.Containers[i]; c.Name == name {
			return c
		}
	}
	return nil
}
