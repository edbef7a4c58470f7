package v1

import (
	"math"
	"strings"
)

// IsSuspended reports whether spec.suspend is true.
func (s *RayClusterSpec) IsSuspended() bool {
	return s.Suspend != nil && *s.Suspend
}

// AutoscalingEnabled reports whether the in-tree Ray autoscaler is on, in
// which case the autoscaler, not the user, owns worker replica counts.
func (s *RayClusterSpec) AutoscalingEnabled() bool {
	return s.EnableInTreeAutoscaling != nil && *s.EnableInTreeAutoscaling
}

// ExternalManager returns the controller named in spec.managedBy when it is
// not the built-in one; ok is false when Gantry should reconcile the cluster.
func (s *RayClusterSpec) ExternalManager() (manager string, ok bool) {
	if s.ManagedBy == nil || *s.ManagedBy == KubeRayController {
		return "", false
	}
	return *s.ManagedBy, true
}

// UpgradeType is the effective upgrade strategy: None when none is set,
// because KubeRay never restarts Pods on spec changes unless asked to.
func (s *RayClusterSpec) UpgradeType() RayClusterUpgradeType {
	if s.UpgradeStrategy == nil || s.UpgradeStrategy.Type == nil {
		return RayClusterUpgradeNone
	}
	return *s.UpgradeStrategy.Type
}

// GCSFaultToleranceEnabled reports whether the cluster keeps GCS state in
// Redis, either through gcsFaultToleranceOptions or the older
// ray.io/ft-enabled annotation.
func (c *RayCluster) GCSFaultToleranceEnabled() bool {
	if c.Spec.GcsFaultToleranceOptions != nil {
		return true
	}
	v, ok := c.Annotations[RayFTEnabledAnnotationKey]
	return ok && strings.EqualFold(v, "true")
}

// IsSuspended reports whether this worker group is suspended.
func (w *WorkerGroupSpec) IsSuspended() bool {
	return w.Suspend != nil && *w.Suspend
}

// minReplicas and maxReplicas read the bounds with the CRD defaults, so
// objects that never went through the API server (unit tests, fake clients)
// behave like stored ones.
func (w *WorkerGroupSpec) minReplicas() int32 {
	if w.MinReplicas == nil {
		return 0
	}
	return *w.MinReplicas
}

func (w *WorkerGroupSpec) maxReplicas() int32 {
	if w.MaxReplicas == nil {
		return math.MaxInt32
	}
	return *w.MaxReplicas
}

// DesiredReplicas is the number of replicas the group should run: 0 when
// suspended, otherwise replicas clamped into [minReplicas, maxReplicas]
// (a missing replicas counts as minReplicas). If minReplicas exceeds
// maxReplicas the lower bound wins, as in KubeRay; validation reports that
// spec as invalid separately.
func (w *WorkerGroupSpec) DesiredReplicas() int32 {
	if w.IsSuspended() {
		return 0
	}
	lo, hi := w.minReplicas(), w.maxReplicas()
	switch {
	case w.Replicas == nil || *w.Replicas < lo:
		return lo
	case *w.Replicas > hi:
		return hi
	default:
		return *w.Replicas
	}
}

// Hosts is the number of Pods per replica. Zero reads as the CRD default
// of 1: numOfHosts is omitempty, so a Go client that leaves it 0 sends
// nothing and the API server stores 1; treating 0 the same keeps objects
// built in Go consistent with what the server would store.
func (w *WorkerGroupSpec) Hosts() int32 {
	if w.NumOfHosts < 1 {
		return 1
	}
	return w.NumOfHosts
}

// DesiredPods is DesiredReplicas × Hosts, saturating at MaxInt32.
func (w *WorkerGroupSpec) DesiredPods() int32 {
	return saturatingMul(w.DesiredReplicas(), w.Hosts())
}

// DesiredWorkerPods is the status.desiredWorkerReplicas value: desired
// worker Pods summed over all groups (suspended groups contribute 0).
func (s *RayClusterSpec) DesiredWorkerPods() int32 {
	var total int32
	for i := range s.WorkerGroupSpecs {
		total = saturatingAdd(total, s.WorkerGroupSpecs[i].DesiredPods())
	}
	return total
}

// MinWorkerPods is the status.minWorkerReplicas value: minReplicas ×
// numOfHosts summed over unsuspended groups.
func (s *RayClusterSpec) MinWorkerPods() int32 {
	return s.sumOverActiveGroups((*WorkerGroupSpec).minReplicas)
}

// MaxWorkerPods is the status.maxWorkerReplicas value: maxReplicas ×
// numOfHosts summed over unsuspended groups. It saturates at MaxInt32 where
// KubeRay's int32 arithmetic wraps negative: the default maxReplicas is
// already MaxInt32, so any multi-host or second unbounded group would
// otherwise overflow.
func (s *RayClusterSpec) MaxWorkerPods() int32 {
	return s.sumOverActiveGroups((*WorkerGroupSpec).maxReplicas)
}

func (s *RayClusterSpec) sumOverActiveGroups(replicas func(*WorkerGroupSpec) int32) int32 {
	var total int32
	for i := range s.WorkerGroupSpecs {
		w := &s.WorkerGroupSpecs[i]
		if w.IsSuspended() {
			continue
		}
		total = saturatingAdd(total, saturatingMul(replicas(w), w.Hosts()))
	}
	return total
}

// saturatingMul and saturatingAdd work on the non-negative counts of this
// API (negative inputs are treated as 0, which validation rejects anyway).
func saturatingMul(a, b int32) int32 {
	if a <= 0 || b <= 0 {
		return 0
	}
	p := int64(a) * int64(b)
	if p > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(p)
}

func saturatingAdd(a, b int32) int32 {
	if b <= 0 {
		return a
	}
	sum := int64(a) + int64(b)
	if sum > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(sum)
}
