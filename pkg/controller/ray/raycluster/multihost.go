package raycluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/events"
)

// hostReplica is one logical replica of a multi-host group: numOfHosts
// Pods (one per host of a TPU slice, say) created and deleted together.
type hostReplica struct {
	name  string
	index int
	pods  []corev1.Pod
}

// reconcileMultiHostWorkerGroup manages a group with numOfHosts > 1 in
// whole replicas, keyed by ray.io/worker-group-replica-name: a replica that
// lost a Pod, has an unhealthy Pod or has a Pod in workersToDelete is
// deleted entirely, and new replicas get numOfHosts Pods at once.
func (r *Reconciler) reconcileMultiHostWorkerGroup(ctx context.Context, s *scope, group *rayv1.WorkerGroupSpec, pods []corev1.Pod) error {
	hosts := int(group.Hosts())
	replicas, orphans := groupReplicas(pods)

	// Incomplete replicas (a Pod deleted by someone, a create that failed
	// half-way) and Pods without a replica name cannot be repaired.
	var broken []corev1.Pod
	broken = append(broken, orphans...)
	var valid []*hostReplica
	for _, rep := range replicas {
		if len(rep.pods) < hosts {
			broken = append(broken, rep.pods...)
		} else {
			valid = append(valid, rep)
		}
	}
	if len(broken) > 0 {
		if err := r.deleteReplicaPods(ctx, s, group, broken, "incomplete multi-host replicas"); err != nil {
			return err
		}
		return fmt.Errorf("deleted %d Pods of incomplete multi-host replicas in group %s", len(broken), group.GroupName)
	}

	// One unhealthy host fails its whole replica.
	var unhealthy []corev1.Pod
	healthy := valid[:0]
	for _, rep := range valid {
		bad := false
		for i := range rep.pods {
			if del, _ := shouldDeletePod(&rep.pods[i]); del {
				bad = true
				break
			}
		}
		if bad {
			unhealthy = append(unhealthy, rep.pods...)
		} else {
			healthy = append(healthy, rep)
		}
	}
	if len(unhealthy) > 0 {
		if err := r.deleteReplicaPods(ctx, s, group, unhealthy, "unhealthy multi-host replicas"); err != nil {
			return err
		}
		return fmt.Errorf("deleted %d Pods of unhealthy multi-host replicas in group %s", len(unhealthy), group.GroupName)
	}
	valid = healthy

	// The autoscaler names Pods; their whole replicas go.
	if len(group.ScaleStrategy.WorkersToDelete) > 0 {
		named := map[string]bool{}
		for _, n := range group.ScaleStrategy.WorkersToDelete {
			named[n] = true
		}
		var victims []corev1.Pod
		kept := valid[:0]
		for _, rep := range valid {
			hit := false
			for _, p := range rep.pods {
				if named[p.Name] {
					hit = true
					break
				}
			}
			if hit {
				victims = append(victims, rep.pods...)
			} else {
				kept = append(kept, rep)
			}
		}
		if len(victims) > 0 {
			return r.deleteReplicaPods(ctx, s, group, victims, "named in workersToDelete")
		}
		valid = kept
	}

	desiredPods := int(group.DesiredPods())
	if desiredPods%hosts != 0 {
		return fmt.Errorf("worker group %s: desired Pods (%d) is not a multiple of numOfHosts (%d)", group.GroupName, desiredPods, hosts)
	}
	diff := desiredPods/hosts - len(valid)
	switch {
	case diff > 0:
		return r.createReplicas(ctx, s, group, valid, diff)
	case diff < 0:
		if s.Object.Spec.AutoscalingEnabled() && !r.cfg.EnableRandomPodDelete {
			return nil
		}
		// Remove the highest replica indices first so indices stay dense.
		sort.Slice(valid, func(i, j int) bool { return valid[i].index > valid[j].index })
		var victims []corev1.Pod
		for _, rep := range valid[:-diff] {
			victims = append(victims, rep.pods...)
		}
		return r.deleteReplicaPods(ctx, s, group, victims, "scale down")
	}
	return nil
}

// groupReplicas groups live Pods by replica name, in name order. Pods
// without a replica name (made before the gate was on) are orphans.
func groupReplicas(pods []corev1.Pod) ([]*hostReplica, []corev1.Pod) {
	byName := map[string]*hostReplica{}
	var orphans []corev1.Pod
	for _, p := range pods {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		name := p.Labels[rayv1.RayWorkerReplicaNameKey]
		if name == "" {
			orphans = append(orphans, p)
			continue
		}
		rep, ok := byName[name]
		if !ok {
			idx, err := strconv.Atoi(p.Labels[rayv1.RayWorkerReplicaIndexKey])
			if err != nil {
				idx = -1
			}
			rep = &hostReplica{name: name, index: idx}
			byName[name] = rep
		}
		rep.pods = append(rep.pods, p)
	}
	out := make([]*hostReplica, 0, len(byName))
	for _, rep := range byName {
		out = append(out, rep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, orphans
}

func (r *Reconciler) deleteReplicaPods(ctx context.Context, s *scope, group *rayv1.WorkerGroupSpec, pods []corev1.Pod, why string) error {
	names, err := r.deletePods(ctx, s, group.GroupName, pods)
	s.podEvents.add(rayv1.DeletedWorkerPod, names, "Deleted %s in group %s (%s)", events.Count(len(names), "worker Pod"), group.GroupName, why)
	if err != nil {
		r.recorder.Warning(s.Object, string(rayv1.FailedToDeleteWorkerPod), "Failed to delete worker Pods in group %s: %v", group.GroupName, err)
		return NewReplicaFailureError(rayv1.FailedDeleteWorkerPod, err)
	}
	return nil
}

// createReplicas creates n replicas of numOfHosts Pods each, with the
// lowest free replica indices and fresh replica names.
func (r *Reconciler) createReplicas(ctx context.Context, s *scope, group *rayv1.WorkerGroupSpec, existing []*hostReplica, n int) error {
	if s.podLimit != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("not creating worker replicas", "group", group.GroupName, "reason", s.podLimit.Error())
		return nil
	}
	cluster := s.Object
	key := client.ObjectKeyFromObject(cluster).String()
	hosts := int(group.Hosts())
	used := map[int]bool{}
	for _, rep := range existing {
		used[rep.index] = true
	}
	type plan struct {
		name  string
		index int
	}
	plans := make([]plan, 0, n)
	for i := 0; len(plans) < n; i++ {
		if !used[i] {
			plans = append(plans, plan{name: group.GroupName + "-" + utilrand.String(5), index: i})
		}
	}
	// Batches create concurrently; each call has its own replica's slots.
	names := make([]string, n*hosts)
	created, err := r.expectations.CreateBatchOf(key, group.GroupName, n, hosts, func(i int) (int, error) {
		for h := 0; h < hosts; h++ {
			pod := podspec.BuildWorkerPod(cluster, group, podspec.WorkerReplica{Name: plans[i].name, Index: plans[i].index, HostIndex: h}, r.cfg.Build)
			if err := r.client.Create(ctx, &pod); err != nil {
				return h, err
			}
			names[i*hosts+h] = pod.Name
		}
		return hosts, nil
	})
	if created > 0 {
		s.podsChanged = true
		s.podEvents.add(rayv1.CreatedWorkerPod, nonEmpty(names), "Created %s (%d hosts per replica) in group %s", events.Count(created, "worker Pod"), hosts, group.GroupName)
	}
	if err != nil {
		r.recorder.Warning(cluster, string(rayv1.FailedToCreateWorkerPod), "Failed to create worker Pods in group %s: %v", group.GroupName, err)
		return NewReplicaFailureError(rayv1.FailedCreateWorkerPod, err)
	}
	return nil
}
