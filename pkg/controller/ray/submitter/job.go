package submitter

import (
	"fmt"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// defaultBackoffLimit is the submitter Job's retries when
// submitterConfig.backoffLimit is unset: three attempts in all, enough for
// a dropped log stream, few for an application that keeps failing.
const defaultBackoffLimit int32 = 2

// Job is the K8sJobMode submitter Job running template: named after the
// RayJob, in its namespace, labelled as KubeRay labels it and controlled by
// the RayJob, so it goes when the RayJob goes.
func Job(job *rayv1.RayJob, template corev1.PodTemplateSpec) *batchv1.Job {
	backoffLimit := defaultBackoffLimit
	if c := job.Spec.SubmitterConfig; c != nil && c.BackoffLimit != nil {
		backoffLimit = *c.BackoffLimit
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            job.Name,
			Namespace:       job.Namespace,
			Labels:          originLabels(nil, job.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, rayv1.RayJobGroupVersionKind)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(backoffLimit),
			Template:     template,
		},
	}
}

// ClusterFor is the RayCluster called name that job creates from its
// spec.rayClusterSpec, controlled by the RayJob. It carries the RayJob's
// labels and annotations, the labels naming the RayJob and its submission
// mode and, in SidecarMode, the submitter container in its head Pod, whose
// restartPolicy becomes Never (a failed submission fails the RayJob rather
// than rerunning the head), and the annotation that keeps the operator from
// recreating that head Pod once provisioned.
func ClusterFor(job *rayv1.RayJob, name string, opts Options) (*rayv1.RayCluster, error) {
	if job.Spec.RayClusterSpec == nil {
		return nil, fmt.Errorf("RayJob %s: no spec.rayClusterSpec to create a RayCluster from", job.Name)
	}
	labels := make(map[string]string, len(job.Labels)+3)
	maps.Copy(labels, job.Labels)
	labels[rayv1.RayOriginatedFromCRNameLabelKey] = job.Name
	labels[rayv1.RayOriginatedFromCRDLabelKey] = rayv1.RayJobKind
	labels[rayv1.RayJobSubmissionModeLabelKey] = string(job.Spec.SubmissionMode)

	annotations := make(map[string]string, len(job.Annotations)+1)
	maps.Copy(annotations, job.Annotations)
	sidecar := job.Spec.SubmissionMode == rayv1.SidecarMode
	if sidecar {
		annotations[rayv1.DisableProvisionedHeadRestartAnnotationKey] = "true"
	}

	cluster := &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       job.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, rayv1.RayJobGroupVersionKind)},
		},
		Spec: *job.Spec.RayClusterSpec.DeepCopy(),
	}
	if !sidecar {
		return cluster, nil
	}
	c, err := SidecarContainer(job, cluster, opts)
	if err != nil {
		return nil, err
	}
	head := &cluster.Spec.HeadGroupSpec.Template.Spec
	head.Containers = append(head.Containers, c)
	head.RestartPolicy = corev1.RestartPolicyNever
	return cluster, nil
}
