package raycluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/slowstart"
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
func (r *Reconciler) reconcileMultiHostWorkerGroup(ctx context.Context, cluster *rayv1.RayCluster, group *rayv1.WorkerGroupSpec, pods []corev1.Pod, st *reconcileState) error {
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
		if err := r.deleteReplicaPods(ctx, cluster, group, broken, "incomplete multi-host replicas", st); err != nil {
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
		if err := r.deleteReplicaPods(ctx, cluster, group, unhealthy, "unhealthy multi-host replicas", st); err != nil {
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
			return r.deleteReplicaPods(ctx, cluster, group, victims, "named in workersToDelete", st)
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
		return r.createReplicas(ctx, cluster, group, valid, diff, st)
	case diff < 0:
		if cluster.Spec.AutoscalingEnabled() && !r.cfg.EnableRandomPodDelete {
			return nil
		}
		// Remove the highest replica indices first so indices stay dense.
		sort.Slice(valid, func(i, j int) bool { return valid[i].index > valid[j].index })
		var victims []corev1.Pod
		for _, rep := range valid[:-diff] {
			victims = append(victims, rep.pods...)
		}
		return r.deleteReplicaPods(ctx, cluster, group, victims, "scale down", st)
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

func (r *Reconciler) deleteReplicaPods(ctx context.Context, cluster *rayv1.RayCluster, group *rayv1.WorkerGroupSpec, pods []corev1.Pod, why string, st *reconcileState) error {
	n, err := r.deletePods(ctx, cluster, st, group.GroupName, pods)
	if n > 0 {
		st.events.add(rayv1.DeletedWorkerPod, fmt.Sprintf("Deleted %s in group %s: %s", countOf(n, "worker Pod"), group.GroupName, why))
	}
	if err != nil {
		warn(r.recorder, cluster, rayv1.FailedToDeleteWorkerPod, "Failed to delete worker Pods in group %s: %v", group.GroupName, err)
		return NewReplicaFailureError(rayv1.FailedDeleteWorkerPod, err)
	}
	return nil
}

// createReplicas creates n replicas of numOfHosts Pods each, with the
// lowest free replica indices and fresh replica names.
func (r *Reconciler) createReplicas(ctx context.Context, cluster *rayv1.RayCluster, group *rayv1.WorkerGroupSpec, existing []*hostReplica, n int, st *reconcileState) error {
	if st.podLimit != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("not creating worker replicas", "group", group.GroupName, "reason", st.podLimit.Error())
		return nil
	}
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
	r.expectations.ExpectCreations(key, group.GroupName, n*hosts)
	var createdPods atomic.Int32
	_, err := slowstart.SlowStartBatch(n, 1, func(i int) error {
		for h := 0; h < hosts; h++ {
			pod := BuildWorkerPod(cluster, group, WorkerReplica{Name: plans[i].name, Index: plans[i].index, HostIndex: h}, r.cfg.Build)
			if err := r.client.Create(ctx, &pod); err != nil {
				return err
			}
			createdPods.Add(1)
		}
		return nil
	})
	created := int(createdPods.Load())
	if created < n*hosts {
		r.expectations.CancelCreations(key, group.GroupName, n*hosts-created)
	}
	if created > 0 {
		st.podsChanged = true
		st.events.add(rayv1.CreatedWorkerPod, fmt.Sprintf("Created %s (%d hosts per replica) in group %s", countOf(created, "worker Pod"), hosts, group.GroupName))
	}
	if err != nil {
		warn(r.recorder, cluster, rayv1.FailedToCreateWorkerPod, "Failed to create worker Pods in group %s: %v", group.GroupName, err)
		return NewReplicaFailureError(rayv1.FailedCreateWorkerPod, err)
	}
	return nil
}
