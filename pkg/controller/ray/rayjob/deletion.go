package rayjob

import (
	"context"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// finished runs what a RayJob that ended asks to be deleted, once its TTL
// has passed: its deletionRules, else the legacy onSuccess/onFailure pair,
// else shutdownAfterJobFinishes. A clusterSelector's cluster is never
// deleted. The status is not written (s.hold).
func (r *Reconciler) finished(ctx context.Context, s *scope) error {
	job := s.Object
	if len(job.Spec.ClusterSelector) != 0 || job.Status.EndTime == nil {
		return nil
	}
	if d := job.Spec.DeletionStrategy; d != nil && r.cfg.DeletionPolicy {
		if d.DeletionRules != nil {
			return r.deletionRules(ctx, s)
		}
		return r.legacyPolicy(ctx, s)
	}
	if !job.Spec.ShutdownAfterJobFinishes {
		return nil
	}
	if r.waitTTL(s, job.Spec.TTLSecondsAfterFinished) {
		return nil
	}
	if r.cfg.DeleteRayJobAfterFinishes {
		return r.execute(ctx, s, rayv1.DeleteSelf)
	}
	// The submitter Job stays: its logs are the driver's, and a finished
	// Job holds no compute.
	return r.execute(ctx, s, rayv1.DeleteCluster)
}

// waitTTL reports whether ttl seconds after the end are still to come,
// and asks to be back then.
func (r *Reconciler) waitTTL(s *scope, ttl int32) bool {
	at := s.Object.Status.EndTime.Add(time.Duration(ttl) * time.Second)
	if at.After(s.now) {
		s.Requeue.After(at.Sub(s.now) + 2*time.Second)
		return true
	}
	return false
}

// legacyPolicy is onSuccess/onFailure, after ttlSecondsAfterFinished.
func (r *Reconciler) legacyPolicy(ctx context.Context, s *scope) error {
	job := s.Object
	d := job.Spec.DeletionStrategy
	var p *rayv1.DeletionPolicy
	switch job.Status.JobStatus {
	case rayv1.JobStatusSucceeded:
		p = d.OnSuccess
	case rayv1.JobStatusFailed:
		p = d.OnFailure
	}
	if p == nil || p.Policy == nil || *p.Policy == rayv1.DeleteNone {
		return nil
	}
	if r.waitTTL(s, job.Spec.TTLSecondsAfterFinished) {
		return nil
	}
	return r.execute(ctx, s, *p.Policy)
}

// impact orders the policies: when several rules are due at once (the
// manager was down), the most destructive runs, so resources are freed
// first.
var impact = map[rayv1.DeletionPolicyType]int{
	rayv1.DeleteNone: 1, rayv1.DeleteWorkers: 2, rayv1.DeleteCluster: 3, rayv1.DeleteSelf: 4,
}

// deletionRules runs at most one due rule per reconcile, the most
// destructive one not yet done, and asks to be back for the next rule.
func (r *Reconciler) deletionRules(ctx context.Context, s *scope) error {
	if due := r.dueRule(s); due != nil {
		return r.execute(ctx, s, due.Policy)
	}
	return nil
}

// dueRule is the most destructive rule whose condition holds, whose TTL
// has passed and whose deletion is not done yet; nil when none is.
func (r *Reconciler) dueRule(s *scope) *rayv1.DeletionRule {
	job := s.Object
	var due *rayv1.DeletionRule
	for i := range job.Spec.DeletionStrategy.DeletionRules {
		rule := &job.Spec.DeletionStrategy.DeletionRules[i]
		if !ruleMatches(rule, job) || r.waitTTL(s, rule.Condition.TTLSeconds) || r.done(s, rule.Policy) {
			continue
		}
		if due == nil || impact[rule.Policy] > impact[due.Policy] {
			due = rule
		}
	}
	return due
}

func ruleMatches(rule *rayv1.DeletionRule, job *rayv1.RayJob) bool {
	if c := rule.Condition; c.JobStatus != nil {
		return *c.JobStatus == job.Status.JobStatus
	} else if c.JobDeploymentStatus != nil {
		return *c.JobDeploymentStatus == job.Status.JobDeploymentStatus
	}
	return false
}

// done reports whether what policy deletes is already gone (or going).
func (r *Reconciler) done(s *scope, policy rayv1.DeletionPolicyType) bool {
	cluster := s.cluster
	switch policy {
	case rayv1.DeleteNone:
		return true
	case rayv1.DeleteCluster:
		return cluster == nil || cluster.DeletionTimestamp != nil
	case rayv1.DeleteWorkers:
		if cluster == nil || cluster.DeletionTimestamp != nil {
			return true
		}
		for _, g := range cluster.Spec.WorkerGroupSpecs {
			if !ptr.Deref(g.Suspend, false) {
				return false
			}
		}
		return true
	}
	return false
}

// execute deletes what policy names.
func (r *Reconciler) execute(ctx context.Context, s *scope, policy rayv1.DeletionPolicyType) error {
	job := s.Object
	switch policy {
	case rayv1.DeleteCluster:
		_, err := r.deleteCluster(ctx, s)
		return err
	case rayv1.DeleteWorkers:
		return r.suspendWorkers(ctx, s)
	case rayv1.DeleteSelf:
		return r.client.Delete(ctx, job)
	}
	return nil
}

// suspendWorkers suspends every worker group of the RayJob's cluster: the
// head (and its dashboard, with the job's logs) stays.
func (r *Reconciler) suspendWorkers(ctx context.Context, s *scope) error {
	job, cluster := s.Object, s.cluster
	if cluster == nil {
		return nil
	}
	updated := cluster.DeepCopy()
	for i := range updated.Spec.WorkerGroupSpecs {
		updated.Spec.WorkerGroupSpecs[i].Suspend = ptr.To(true)
	}
	if err := r.client.Update(ctx, updated); err != nil {
		r.recorder.Warning(job, string(rayv1.FailedToUpdateRayCluster), "Failed to suspend worker groups in cluster %s/%s: %v", cluster.Namespace, cluster.Name, err)
		return err
	}
	s.cluster = updated
	s.Events.Add(string(rayv1.UpdatedRayCluster), "Set the `suspend` field to true for all worker groups in cluster %s/%s", cluster.Namespace, cluster.Name)
	return nil
}
