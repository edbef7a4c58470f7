package raytesting

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// RayJobWrapper wraps a RayJob under construction.
type RayJobWrapper struct {
	rayv1.RayJob
}

// MakeRayJob starts a RayJob named name in namespace ns that runs
// entrypoint on a cluster of one head and one worker (K8sJobMode).
func MakeRayJob(name, ns, entrypoint string) *RayJobWrapper {
	cluster := MakeRayCluster(name, ns).WorkerGroup("cpu", 1).Obj()
	return &RayJobWrapper{rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid")},
		Spec: rayv1.RayJobSpec{
			Entrypoint:     entrypoint,
			SubmissionMode: rayv1.K8sJobMode,
			RayClusterSpec: &cluster.Spec,
		},
	}}
}

// Obj returns a copy of the built RayJob.
func (w *RayJobWrapper) Obj() *rayv1.RayJob { return w.RayJob.DeepCopy() }

// Mode sets the submission mode.
func (w *RayJobWrapper) Mode(m rayv1.JobSubmissionMode) *RayJobWrapper {
	w.Spec.SubmissionMode = m
	return w
}

// Annotation sets an annotation (a RayJob passes them on to its cluster).
func (w *RayJobWrapper) Annotation(k, v string) *RayJobWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Label sets a label.
func (w *RayJobWrapper) Label(k, v string) *RayJobWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// BackoffLimit sets spec.backoffLimit.
func (w *RayJobWrapper) BackoffLimit(n int32) *RayJobWrapper {
	w.Spec.BackoffLimit = ptr.To(n)
	return w
}

// Suspend sets spec.suspend.
func (w *RayJobWrapper) Suspend(s bool) *RayJobWrapper {
	w.Spec.Suspend = s
	return w
}

// ShutdownAfterJobFinishes sets spec.shutdownAfterJobFinishes and the TTL.
func (w *RayJobWrapper) ShutdownAfterJobFinishes(ttl int32) *RayJobWrapper {
	w.Spec.ShutdownAfterJobFinishes = true
	w.Spec.TTLSecondsAfterFinished = ttl
	return w
}

// DeletionRule adds a deletion rule on the Ray job's status.
func (w *RayJobWrapper) DeletionRule(policy rayv1.DeletionPolicyType, on rayv1.JobStatus, ttl int32) *RayJobWrapper {
	if w.Spec.DeletionStrategy == nil {
		w.Spec.DeletionStrategy = &rayv1.DeletionStrategy{}
	}
	w.Spec.DeletionStrategy.DeletionRules = append(w.Spec.DeletionStrategy.DeletionRules, rayv1.DeletionRule{
		Policy: policy, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(on), TTLSeconds: ttl}})
	return w
}

// ClusterSelector runs the job on the existing cluster named cluster.
func (w *RayJobWrapper) ClusterSelector(cluster string) *RayJobWrapper {
	w.Spec.RayClusterSpec = nil
	w.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: cluster}
	return w
}

// ActiveDeadline sets spec.activeDeadlineSeconds.
func (w *RayJobWrapper) ActiveDeadline(seconds int32) *RayJobWrapper {
	w.Spec.ActiveDeadlineSeconds = ptr.To(seconds)
	return w
}

// SubmitterTemplate sets spec.submitterPodTemplate.
func (w *RayJobWrapper) SubmitterTemplate(t corev1.PodTemplateSpec) *RayJobWrapper {
	w.Spec.SubmitterPodTemplate = &t
	return w
}

// JobID sets spec.jobId.
func (w *RayJobWrapper) JobID(id string) *RayJobWrapper {
	w.Spec.JobId = id
	return w
}
