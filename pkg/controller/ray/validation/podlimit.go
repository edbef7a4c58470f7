package validation

import (
	"math"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// DefaultMaxPodsPerCluster is --ray-max-pods-per-cluster's default. A
// RayCluster's Pods are counted as its desired replicas times numOfHosts,
// where int32 fields allow 2147483647 × 2147483647; a typo or a template
// bug then floods the namespace, the API server and the scheduler. 1000 is
// well above the clusters KubeRay's samples and Gantry's benchmarks run,
// low enough that a mistake is stopped before it costs minutes of API
// writes, and raising it is one flag.
const DefaultMaxPodsPerCluster int32 = 1000

// PodLimitFlag names the manager flag in messages users read.
const PodLimitFlag = "--ray-max-pods-per-cluster"

// desiredPodTotal is the head plus every worker group's desired replicas ×
// numOfHosts, in int64 (each product fits; the sum saturates), and the index
// of the first group that takes the total above limit (-1 when none does).
func desiredPodTotal(spec *rayv1.RayClusterSpec, limit int32) (total int64, over int) {
	total, over = 1, -1
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		pods := int64(g.DesiredReplicas()) * int64(g.Hosts())
		if total > math.MaxInt64-pods {
			total = math.MaxInt64
		} else {
			total += pods
		}
		if over < 0 && total > int64(limit) {
			over = i
		}
	}
	return total, over
}

// ValidatePodLimit reports a spec whose desired Pods (head and workers)
// exceed limit, as a field error on the worker group that crosses it. A
// limit below 1 checks nothing. Admission and the reconciler share it.
func ValidatePodLimit(spec *rayv1.RayClusterSpec, limit int32) error {
	if limit < 1 {
		return nil
	}
	total, over := desiredPodTotal(spec, limit)
	if over < 0 {
		return nil
	}
	return forbiddenf(workerGroupPath.Index(over),
		"the RayCluster would have %d Pods (1 head and %d workers); at most %d Pods per RayCluster are allowed (%s)",
		total, total-1, limit, PodLimitFlag)
}
