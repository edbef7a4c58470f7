package submitter

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
)

// envPythonUnbuffered makes the submitter's Python print as it goes, so
// the Pod's log follows the job.
const envPythonUnbuffered = "PYTHONUNBUFFERED"

// Template is the Pod template of the K8sJobMode submitter Job: the user's
// spec.submitterPodTemplate, or one container running the head's image with
// a small fixed request and restartPolicy Never. Its first container runs
// the submission: it gets the generated command unless the user gave one,
// and always PYTHONUNBUFFERED, RAY_DASHBOARD_ADDRESS and
// RAY_JOB_SUBMISSION_ID (appended: a user's own value of one of them comes
// first) and the cluster's token authentication settings. The template
// carries the labels that tie it to the RayJob. cluster is the RayCluster the
// job runs on: the one it created or the one clusterSelector names.
func Template(job *rayv1.RayJob, cluster *rayv1.RayCluster, opts Options) (corev1.PodTemplateSpec, error) {
	if cluster == nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("RayJob %s: the submitter is built for a RayCluster, and there is none", job.Name)
	}
	var tmpl corev1.PodTemplateSpec
	if user := job.Spec.SubmitterPodTemplate; user != nil {
		tmpl = *user.DeepCopy()
		if len(tmpl.Spec.Containers) == 0 {
			return corev1.PodTemplateSpec{}, fmt.Errorf("RayJob %s: spec.submitterPodTemplate has no containers; its first one runs the submission", job.Name)
		}
	} else {
		c, err := defaultContainer(cluster)
		if err != nil {
			return corev1.PodTemplateSpec{}, err
		}
		tmpl.Spec = corev1.PodSpec{Containers: []corev1.Container{c}, RestartPolicy: corev1.RestartPolicyNever}
	}
	if err := opts.configure(&tmpl.Spec.Containers[0], job, cluster, rayv1.K8sJobMode); err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	// KubeRay keys the volume on enableK8sTokenAuth alone, whatever the mode.
	if k8sTokenAuth(cluster) {
		podspec.AddTokenVolume(&tmpl.Spec)
	}
	tmpl.Labels = originLabels(tmpl.Labels, job.Name)
	return tmpl, nil
}

// SidecarContainer is the submitter container SidecarMode adds to the head
// Pod of cluster: the head's image with the default request, always the
// generated command, and the environment Template gives its container. With
// SidecarSubmitterRestart it restarts on failure (a per-container restart
// policy, Kubernetes 1.35's ContainerRestartRules); otherwise the Pod's
// restartPolicy Never holds.
func SidecarContainer(job *rayv1.RayJob, cluster *rayv1.RayCluster, opts Options) (corev1.Container, error) {
	if cluster == nil {
		return corev1.Container{}, fmt.Errorf("RayJob %s: the submitter is built for a RayCluster, and there is none", job.Name)
	}
	c, err := defaultContainer(cluster)
	if err != nil {
		return corev1.Container{}, err
	}
	if err := opts.configure(&c, job, cluster, rayv1.SidecarMode); err != nil {
		return corev1.Container{}, err
	}
	if opts.SidecarSubmitterRestart {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
	}
	return c, nil
}

// defaultContainer is KubeRay's submitter container: the head's image, so
// the `ray` CLI matches the cluster, and a fixed small footprint.
func defaultContainer(cluster *rayv1.RayCluster) (corev1.Container, error) {
	head, err := headContainer(&cluster.Spec)
	if err != nil {
		return corev1.Container{}, fmt.Errorf("RayCluster %s: %w", cluster.Name, err)
	}
	return corev1.Container{
		Name:  rayv1.SubmitterContainerName,
		Image: head.Image,
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("1"),
				corev1.ResourceMemory: resource.MustParse("1Gi"),
			},
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("200Mi"),
			},
		},
	}, nil
}

// configure makes c the container that submits job in mode. The command is
// built (and its errors reported) even when the user's own one is kept.
func (o Options) configure(c *corev1.Container, job *rayv1.RayJob, cluster *rayv1.RayCluster, mode rayv1.JobSubmissionMode) error {
	words, err := o.Command(job, mode)
	if err != nil {
		return err
	}
	if mode == rayv1.SidecarMode || len(c.Command) == 0 {
		c.Command = o.shell()
		c.Args = []string{strings.Join(words, " ")}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: envPythonUnbuffered, Value: "1"},
		// For a user's own command: ray job submit
		// --address=http://$RAY_DASHBOARD_ADDRESS --submission-id=$RAY_JOB_SUBMISSION_ID
		corev1.EnvVar{Name: rayv1.RayDashboardAddressEnv, Value: job.Status.DashboardURL},
		corev1.EnvVar{Name: rayv1.RayJobSubmissionIDEnv, Value: job.Status.JobId},
	)
	if podspec.AuthEnabled(&cluster.Spec) {
		podspec.SetTokenAuthEnv(c, cluster)
	}
	return nil
}

// shell runs the command with -e, so the first failing step fails the
// submitter.
func (o Options) shell() []string {
	if o.LoginShell {
		return []string{"/bin/bash", "-cel", "--"}
	}
	return []string{"/bin/bash", "-ce", "--"}
}

func k8sTokenAuth(cluster *rayv1.RayCluster) bool {
	a := cluster.Spec.AuthOptions
	return a != nil && a.EnableK8sTokenAuth != nil && *a.EnableK8sTokenAuth
}

func addEnv(c *corev1.Container, v corev1.EnvVar) {
	if !podspec.HasEnv(c.Env, v.Name) {
		c.Env = append(c.Env, v)
	}
}
