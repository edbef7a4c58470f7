package raytesting

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// samplesDir is testdata/samples beside this file, wherever the test that
// reads it runs.
func samplesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "samples")
}

// The seeds of the RayCluster fuzz targets (validation and podspec) are KubeRay's own samples
// (ray-operator/config/samples at v1.7.0, copied to testdata/samples), as
// JSON, plus a few hostile variants of the first one.

// SampleClusters returns the RayCluster documents of testdata/samples as
// JSON.
func SampleClusters(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no samples: %v", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var meta struct{ Kind string }
			if yaml.Unmarshal(doc, &meta) != nil || meta.Kind != rayv1.RayClusterKind {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		tb.Fatal("no RayCluster in testdata/samples")
	}
	return out
}

// HostileClusters are variants of a sample with the inputs issue #13 is
// about (validation and pod building must hold on them): odd group names, shell metacharacters in rayStartParams, odd
// Ray resource names and quantities.
func HostileClusters(tb testing.TB, base []byte) [][]byte {
	tb.Helper()
	mutate := func(f func(c *rayv1.RayCluster)) []byte {
		c := &rayv1.RayCluster{}
		if err := json.Unmarshal(base, c); err != nil {
			tb.Fatal(err)
		}
		f(c)
		out, err := json.Marshal(c)
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	return [][]byte{
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "1; touch /tmp/x", "object-manager-port": "$(id)", "x": "a\nb"}
		}),
		mutate(func(c *rayv1.RayCluster) {
			if len(c.Spec.WorkerGroupSpecs) > 0 {
				c.Spec.WorkerGroupSpecs[0].GroupName = "Group_With.Odd-Name"
				c.Spec.WorkerGroupSpecs[0].NumOfHosts = 2
			}
		}),
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.HeadGroupSpec.Resources = map[string]string{"custom": "1", "CPU": "2", "nvidia.com/gpu": "1"}
			c.Spec.HeadGroupSpec.Labels = map[string]string{"ray.io/zone": "a"}
		}),
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.EnableInTreeAutoscaling = ptr.To(true)
			c.Spec.HeadGroupSpec.Template.Spec.Containers[0].Command = []string{"echo", "hi"}
			c.Annotations = map[string]string{rayv1.RayFTEnabledAnnotationKey: "true"}
		}),
	}
}

func DecodeCluster(data []byte) (*rayv1.RayCluster, bool) {
	c := &rayv1.RayCluster{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, false
	}
	// The API server always sets these.
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if c.UID == "" {
		c.UID = "0e7f0b1c-uid"
	}
	return c, true
}

// rayJobSamplesDir is testdata/rayjob-samples beside this file: KubeRay
// v1.7.0's RayJob samples, with their folders.
func rayJobSamplesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "rayjob-samples")
}

// RayJobSample is one RayJob document of KubeRay's samples.
type RayJobSample struct {
	// File is the sample's path under ray-operator/config/samples/.
	File string
	// YAML is the document, unchanged.
	YAML []byte
}

// Decode reads the document into a RayJob, refusing unknown fields, and
// completes what the API server would before admission: the name of a
// generateName sample, and a namespace.
func (s RayJobSample) Decode() (*rayv1.RayJob, error) {
	job := &rayv1.RayJob{}
	if err := yaml.UnmarshalStrict(s.YAML, job); err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	if job.Name == "" {
		job.Name = job.GenerateName + "x7k2p"
	}
	if job.Namespace == "" {
		job.Namespace = "default"
	}
	return job, nil
}

// SampleRayJobs returns every RayJob document of testdata/rayjob-samples.
func SampleRayJobs(tb testing.TB) []RayJobSample {
	tb.Helper()
	var out []RayJobSample
	for _, d := range sampleDocs(tb, rayJobSamplesDir(), rayv1.RayJobKind) {
		out = append(out, RayJobSample{File: d.file, YAML: d.yaml})
	}
	return out
}

// sampleDoc is one document of a sample file: its path under the samples
// folder and its YAML, unchanged.
type sampleDoc struct {
	file string
	yaml []byte
}

// sampleDocs returns every document of kind in the YAML files under dir,
// its folders included; none is a test failure.
func sampleDocs(tb testing.TB, dir, kind string) []sampleDoc {
	tb.Helper()
	separator := regexp.MustCompile(`(?m)^---\s*$`)
	var out []sampleDoc
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		for _, doc := range separator.Split(string(data), -1) {
			var meta struct{ Kind string }
			if yaml.Unmarshal([]byte(doc), &meta) != nil || meta.Kind != kind {
				continue
			}
			out = append(out, sampleDoc{file: filepath.ToSlash(rel), yaml: []byte(doc)})
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out) == 0 {
		tb.Fatalf("no %s in %s", kind, dir)
	}
	return out
}

// RayJobRuleCase is one row of the RayJob validation table, shared by the
// unit tests of pkg/controller/ray/validation and the KubeRay oracle: a
// RayJob and Gantry's expected verdict.
type RayJobRuleCase struct {
	Name string
	Job  *rayv1.RayJob
	// DeletionPolicyGateOff turns KubeRay's RayJobDeletionPolicy gate off
	// for the row; it is on by default, in KubeRay as in Gantry.
	DeletionPolicyGateOff bool
	// Layer is the layer that refuses the RayJob ("Metadata", "Spec",
	// "Status"), empty when it is valid.
	Layer string
	// Field is the path of the first refusal's field.
	Field string
	// Mentions is a text the refusal's message must contain: the field,
	// named as the user wrote it.
	Mentions string
}

// BaseRayJob is the valid RayJob the rule rows start from: K8sJobMode on a
// cluster of its own with one worker group, CRD defaults spelled out.
func BaseRayJob() *rayv1.RayJob {
	container := func(name string) []corev1.Container {
		return []corev1.Container{{Name: name, Image: "rayproject/ray:2.52.0"}}
	}
	return &rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: "rayjob-sample", Namespace: "default"},
		Spec: rayv1.RayJobSpec{
			Entrypoint:     "python /home/ray/samples/sample_code.py",
			SubmissionMode: rayv1.K8sJobMode,
			BackoffLimit:   ptr.To[int32](0),
			RayClusterSpec: &rayv1.RayClusterSpec{
				RayVersion: "2.52.0",
				HeadGroupSpec: rayv1.HeadGroupSpec{
					RayStartParams: map[string]string{},
					Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: container("ray-head")}},
				},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
					GroupName:   "small-group",
					Replicas:    ptr.To[int32](1),
					MinReplicas: ptr.To[int32](1),
					MaxReplicas: ptr.To[int32](5),
					Template:    corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: container("ray-worker")}},
				}},
			},
		},
	}
}

// RayJobRuleCases is the table: for every rule of KubeRay v1.7.0's RayJob
// validation a RayJob it refuses and, where the rule has a boundary, one it
// accepts.
func RayJobRuleCases() []RayJobRuleCase {
	type edit = func(*rayv1.RayJob)
	job := func(edits ...edit) *rayv1.RayJob {
		j := BaseRayJob()
		for _, e := range edits {
			e(j)
		}
		return j
	}
	shutdown := func(j *rayv1.RayJob) { j.Spec.ShutdownAfterJobFinishes = true }
	selector := func(j *rayv1.RayJob) {
		j.Spec.RayClusterSpec = nil
		j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "raycluster-kuberay"}
	}
	autoscaled := func(j *rayv1.RayJob) { j.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true) }
	mode := func(m rayv1.JobSubmissionMode) edit { return func(j *rayv1.RayJob) { j.Spec.SubmissionMode = m } }
	backoff := func(n int32) edit { return func(j *rayv1.RayJob) { j.Spec.BackoffLimit = ptr.To(n) } }
	policy := func(p rayv1.DeletionPolicyType) *rayv1.DeletionPolicy {
		return &rayv1.DeletionPolicy{Policy: ptr.To(p)}
	}
	legacy := func(onSuccess, onFailure *rayv1.DeletionPolicy) edit {
		return func(j *rayv1.RayJob) {
			j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{OnSuccess: onSuccess, OnFailure: onFailure}
		}
	}
	onJob := func(p rayv1.DeletionPolicyType, s rayv1.JobStatus, ttl int32) rayv1.DeletionRule {
		return rayv1.DeletionRule{Policy: p, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(s), TTLSeconds: ttl}}
	}
	rules := func(rs ...rayv1.DeletionRule) edit {
		return func(j *rayv1.RayJob) { j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: rs} }
	}
	head := func(j *rayv1.RayJob) *corev1.PodSpec { return &j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec }
	worker := func(j *rayv1.RayJob) *rayv1.WorkerGroupSpec { return &j.Spec.RayClusterSpec.WorkerGroupSpecs[0] }
	const cs = "spec.rayClusterSpec."

	return []RayJobRuleCase{
		{Name: "base", Job: job()},
		{Name: "InteractiveMode without an entrypoint", Job: job(mode(rayv1.InteractiveMode), func(j *rayv1.RayJob) { j.Spec.Entrypoint = "" })},
		{Name: "HTTPMode", Job: job(mode(rayv1.HTTPMode))},

		// metadata
		{Name: "name of 47 characters", Job: job(func(j *rayv1.RayJob) { j.Name = strings.Repeat("a", 47) })},
		{Name: "name of 48 characters", Job: job(func(j *rayv1.RayJob) { j.Name = strings.Repeat("a", 48) }),
			Layer: "Metadata", Field: "metadata.name", Mentions: "metadata.name must be no more than 47 characters"},
		{Name: "name not a DNS-1035 label", Job: job(func(j *rayv1.RayJob) { j.Name = "1-job" }),
			Layer: "Metadata", Field: "metadata.name", Mentions: "metadata.name must be a valid DNS-1035 label"},
		{Name: "name with upper case", Job: job(func(j *rayv1.RayJob) { j.Name = "RayJob" }),
			Layer: "Metadata", Field: "metadata.name", Mentions: "metadata.name"},

		// suspend and shutdown
		{Name: "suspended without shutdownAfterJobFinishes", Job: job(func(j *rayv1.RayJob) { j.Spec.Suspend = true }),
			Layer: "Spec", Field: "spec.suspend", Mentions: "spec.shutdownAfterJobFinishes"},
		{Name: "suspended with shutdownAfterJobFinishes", Job: job(shutdown, func(j *rayv1.RayJob) { j.Spec.Suspend = true })},
		{Name: "suspended with autoscaling", Job: job(shutdown, autoscaled, func(j *rayv1.RayJob) { j.Spec.Suspend = true })},
		{Name: "negative ttlSecondsAfterFinished", Job: job(shutdown, func(j *rayv1.RayJob) { j.Spec.TTLSecondsAfterFinished = -1 }),
			Layer: "Spec", Field: "spec.ttlSecondsAfterFinished", Mentions: "spec.ttlSecondsAfterFinished"},
		{Name: "ttlSecondsAfterFinished without shutdownAfterJobFinishes", Job: job(func(j *rayv1.RayJob) { j.Spec.TTLSecondsAfterFinished = 10 }),
			Layer: "Spec", Field: "spec.ttlSecondsAfterFinished", Mentions: "spec.shutdownAfterJobFinishes"},
		{Name: "ttlSecondsAfterFinished with shutdownAfterJobFinishes", Job: job(shutdown, func(j *rayv1.RayJob) { j.Spec.TTLSecondsAfterFinished = 10 })},

		// deletionStrategy
		{Name: "deletionStrategy without the feature gate", Job: job(rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0))),
			DeletionPolicyGateOff: true, Layer: "Spec", Field: "spec.deletionStrategy", Mentions: "spec.deletionStrategy"},
		{Name: "deletionRules", Job: job(rules(
			onJob(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 0),
			onJob(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 10),
			onJob(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 20),
			onJob(rayv1.DeleteNone, rayv1.JobStatusFailed, 0),
			rayv1.DeletionRule{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed)}},
		))},
		{Name: "deletionRules with shutdownAfterJobFinishes", Job: job(shutdown, rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules", Mentions: "spec.shutdownAfterJobFinishes"},
		{Name: "deletionRules with onSuccess", Job: job(func(j *rayv1.RayJob) {
			j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{OnSuccess: policy(rayv1.DeleteCluster),
				DeletionRules: []rayv1.DeletionRule{onJob(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0)}}
		}), Layer: "Spec", Field: "spec.deletionStrategy.deletionRules", Mentions: "onSuccess"},
		{Name: "empty deletionStrategy", Job: job(func(j *rayv1.RayJob) { j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{} }),
			Layer: "Spec", Field: "spec.deletionStrategy", Mentions: "spec.deletionStrategy"},
		{Name: "empty deletionRules", Job: job(rules()),
			Layer: "Spec", Field: "spec.deletionStrategy", Mentions: "deletionRules"},
		{Name: "legacy onSuccess and onFailure", Job: job(legacy(policy(rayv1.DeleteCluster), policy(rayv1.DeleteSelf)))},
		{Name: "legacy onSuccess alone", Job: job(legacy(policy(rayv1.DeleteCluster), nil)),
			Layer: "Spec", Field: "spec.deletionStrategy.onFailure", Mentions: "spec.deletionStrategy.onFailure"},
		{Name: "legacy onFailure alone", Job: job(legacy(nil, policy(rayv1.DeleteCluster))),
			Layer: "Spec", Field: "spec.deletionStrategy.onSuccess", Mentions: "spec.deletionStrategy.onSuccess"},
		{Name: "legacy onSuccess without a policy", Job: job(legacy(&rayv1.DeletionPolicy{}, policy(rayv1.DeleteCluster))),
			Layer: "Spec", Field: "spec.deletionStrategy.onSuccess.policy", Mentions: "spec.deletionStrategy.onSuccess.policy"},
		{Name: "legacy onFailure without a policy", Job: job(legacy(policy(rayv1.DeleteCluster), &rayv1.DeletionPolicy{})),
			Layer: "Spec", Field: "spec.deletionStrategy.onFailure.policy", Mentions: "spec.deletionStrategy.onFailure.policy"},
		{Name: "legacy DeleteCluster on an existing cluster", Job: job(selector, legacy(policy(rayv1.DeleteCluster), policy(rayv1.DeleteNone))),
			Layer: "Spec", Field: "spec.deletionStrategy.onSuccess.policy", Mentions: "spec.clusterSelector"},
		{Name: "legacy DeleteWorkers on failure on an existing cluster", Job: job(selector, legacy(policy(rayv1.DeleteSelf), policy(rayv1.DeleteWorkers))),
			Layer: "Spec", Field: "spec.deletionStrategy.onFailure.policy", Mentions: "spec.deletionStrategy.onFailure.policy"},
		{Name: "legacy DeleteSelf on an existing cluster", Job: job(selector, legacy(policy(rayv1.DeleteSelf), policy(rayv1.DeleteNone)))},
		{Name: "legacy DeleteWorkers with autoscaling", Job: job(autoscaled, legacy(policy(rayv1.DeleteCluster), policy(rayv1.DeleteWorkers))),
			Layer: "Spec", Field: "spec.deletionStrategy.onFailure.policy", Mentions: "enableInTreeAutoscaling"},
		{Name: "legacy DeleteWorkers without autoscaling", Job: job(legacy(policy(rayv1.DeleteWorkers), policy(rayv1.DeleteWorkers)))},
		{Name: "legacy DeleteNone with shutdownAfterJobFinishes", Job: job(shutdown, legacy(policy(rayv1.DeleteNone), policy(rayv1.DeleteCluster))),
			Layer: "Spec", Field: "spec.deletionStrategy.onSuccess.policy", Mentions: "spec.shutdownAfterJobFinishes"},
		{Name: "legacy DeleteCluster with shutdownAfterJobFinishes", Job: job(shutdown, legacy(policy(rayv1.DeleteCluster), policy(rayv1.DeleteCluster)))},
		{Name: "deletion rule with both statuses", Job: job(rules(rayv1.DeletionRule{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{
			JobStatus: ptr.To(rayv1.JobStatusFailed), JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed)}})),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[0].condition", Mentions: "jobDeploymentStatus"},
		{Name: "deletion rule without a status", Job: job(rules(rayv1.DeletionRule{Policy: rayv1.DeleteCluster})),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[0].condition", Mentions: "jobStatus"},
		{Name: "deletion rule with a negative TTL", Job: job(rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, -1))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds", Mentions: "condition.ttlSeconds"},
		{Name: "deletion rule DeleteCluster on an existing cluster", Job: job(selector, rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, 0))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[0].policy", Mentions: "spec.clusterSelector"},
		{Name: "deletion rule DeleteWorkers on an existing cluster", Job: job(selector, rules(onJob(rayv1.DeleteWorkers, rayv1.JobStatusFailed, 0))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[0].policy", Mentions: "deletionRules[0].policy"},
		{Name: "deletion rule DeleteSelf on an existing cluster", Job: job(selector, rules(onJob(rayv1.DeleteSelf, rayv1.JobStatusFailed, 0)))},
		{Name: "deletion rule DeleteWorkers with autoscaling", Job: job(autoscaled, rules(onJob(rayv1.DeleteWorkers, rayv1.JobStatusFailed, 0))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[0].policy", Mentions: "enableInTreeAutoscaling"},
		{Name: "deletion rule DeleteCluster with autoscaling", Job: job(autoscaled, rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, 0)))},
		{Name: "duplicate deletion rule", Job: job(rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, 0), onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, 30))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[1]", Mentions: "deletionRules[1] repeats deletionRules[0]"},
		{Name: "duplicate deletion rule on the deployment status", Job: job(rules(
			rayv1.DeletionRule{Policy: rayv1.DeleteSelf, Condition: rayv1.DeletionCondition{JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed)}},
			rayv1.DeletionRule{Policy: rayv1.DeleteSelf, Condition: rayv1.DeletionCondition{JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed), TTLSeconds: 5}})),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[1]", Mentions: "jobDeploymentStatus Failed"},
		{Name: "one policy on both statuses", Job: job(rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, 0), onJob(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0)))},
		{Name: "one policy on a job and a deployment status", Job: job(rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, 0),
			rayv1.DeletionRule{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{JobDeploymentStatus: ptr.To(rayv1.JobDeploymentStatusFailed)}}))},
		{Name: "the RayJob deleted before its cluster", Job: job(rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 60), onJob(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 30))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[1].condition.ttlSeconds", Mentions: "deletionRules[1].condition.ttlSeconds"},
		{Name: "the workers deleted after the RayJob", Job: job(rules(onJob(rayv1.DeleteSelf, rayv1.JobStatusFailed, 10), onJob(rayv1.DeleteWorkers, rayv1.JobStatusFailed, 20))),
			Layer: "Spec", Field: "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds", Mentions: "ttlSeconds"},
		{Name: "equal TTLs", Job: job(rules(onJob(rayv1.DeleteWorkers, rayv1.JobStatusFailed, 10), onJob(rayv1.DeleteSelf, rayv1.JobStatusFailed, 10)))},
		{Name: "DeleteNone takes no part in the order", Job: job(rules(onJob(rayv1.DeleteCluster, rayv1.JobStatusFailed, 10), onJob(rayv1.DeleteNone, rayv1.JobStatusFailed, 0)))},

		// cluster selector and submission modes
		{Name: "suspended on an existing cluster", Job: job(selector, shutdown, func(j *rayv1.RayJob) { j.Spec.Suspend = true }),
			Layer: "Spec", Field: "spec.suspend", Mentions: "spec.clusterSelector"},
		{Name: "neither rayClusterSpec nor clusterSelector", Job: job(func(j *rayv1.RayJob) { j.Spec.RayClusterSpec = nil }),
			Layer: "Spec", Field: "spec.rayClusterSpec", Mentions: "spec.clusterSelector"},
		{Name: "on an existing cluster", Job: job(selector)},
		{Name: "both rayClusterSpec and clusterSelector", Job: job(func(j *rayv1.RayJob) {
			j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "raycluster-kuberay"}
		})},
		{Name: "clusterSelector without the cluster key", Job: job(selector, func(j *rayv1.RayJob) { j.Spec.ClusterSelector = map[string]string{"app": "ray"} }),
			Layer: "Spec", Field: "spec.clusterSelector[ray.io/cluster]", Mentions: "spec.clusterSelector"},
		{Name: "clusterSelector with an empty cluster name", Job: job(selector, func(j *rayv1.RayJob) { j.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey] = "" }),
			Layer: "Spec", Field: "spec.clusterSelector[ray.io/cluster]", Mentions: "ray.io/cluster"},
		{Name: "SidecarMode on an existing cluster", Job: job(selector, mode(rayv1.SidecarMode)),
			Layer: "Spec", Field: "spec.submissionMode", Mentions: "spec.submissionMode"},
		{Name: "HTTPMode on an existing cluster", Job: job(selector, mode(rayv1.HTTPMode))},
		{Name: "retries on an existing cluster", Job: job(selector, backoff(1)),
			Layer: "Spec", Field: "spec.backoffLimit", Mentions: "spec.backoffLimit"},
		{Name: "retries in InteractiveMode", Job: job(mode(rayv1.InteractiveMode), backoff(2)),
			Layer: "Spec", Field: "spec.backoffLimit", Mentions: "spec.backoffLimit"},
		{Name: "retries in K8sJobMode", Job: job(backoff(3))},
		{Name: "SidecarMode", Job: job(mode(rayv1.SidecarMode))},
		{Name: "SidecarMode with a submitterPodTemplate", Job: job(mode(rayv1.SidecarMode), func(j *rayv1.RayJob) {
			j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "submitter", Image: "rayproject/ray:2.52.0"}}}}
		}), Layer: "Spec", Field: "spec.submitterPodTemplate", Mentions: "spec.submitterPodTemplate"},
		{Name: "HTTPMode with a submitterPodTemplate", Job: job(mode(rayv1.HTTPMode), func(j *rayv1.RayJob) {
			j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "submitter", Image: "rayproject/ray:2.52.0"}}}}
		})},
		{Name: "SidecarMode with a submitterConfig", Job: job(mode(rayv1.SidecarMode), func(j *rayv1.RayJob) {
			j.Spec.SubmitterConfig = &rayv1.SubmitterConfig{BackoffLimit: ptr.To[int32](1)}
		}), Layer: "Spec", Field: "spec.submitterConfig", Mentions: "spec.submitterConfig"},
		{Name: "SidecarMode with a restarting head", Job: job(mode(rayv1.SidecarMode), func(j *rayv1.RayJob) { head(j).RestartPolicy = corev1.RestartPolicyOnFailure }),
			Layer: "Spec", Field: cs + "headGroupSpec.template.spec.restartPolicy", Mentions: "restartPolicy"},
		{Name: "SidecarMode with a head that never restarts", Job: job(mode(rayv1.SidecarMode), func(j *rayv1.RayJob) { head(j).RestartPolicy = corev1.RestartPolicyNever })},
		{Name: "K8sJobMode with a restarting head", Job: job(func(j *rayv1.RayJob) { head(j).RestartPolicy = corev1.RestartPolicyAlways })},

		// the embedded cluster
		{Name: "Kubernetes token auth", Job: job(func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.RayVersion = "2.55.0"
			j.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
		}), Layer: "Spec", Field: cs + "authOptions.enableK8sTokenAuth", Mentions: "enableK8sTokenAuth"},
		{Name: "token auth", Job: job(func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		})},
		{Name: "token auth on an old Ray", Job: job(func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.RayVersion = "2.46.0"
			j.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		}), Layer: "Spec", Field: cs + "rayVersion", Mentions: "spec.rayClusterSpec"},
		{Name: "head without a container", Job: job(func(j *rayv1.RayJob) { head(j).Containers = nil }),
			Layer: "Spec", Field: cs + "headGroupSpec.template.spec.containers", Mentions: "headGroupSpec"},
		{Name: "negative minReplicas", Job: job(func(j *rayv1.RayJob) { worker(j).MinReplicas = ptr.To[int32](-1) }),
			Layer: "Spec", Field: cs + "workerGroupSpecs[0].minReplicas", Mentions: "minReplicas"},
		{Name: "minReplicas above maxReplicas", Job: job(func(j *rayv1.RayJob) { worker(j).MinReplicas = ptr.To[int32](6) }),
			Layer: "Spec", Field: cs + "workerGroupSpecs[0].minReplicas", Mentions: "maxReplicas"},
		{Name: "suspended worker group without the feature gate", Job: job(func(j *rayv1.RayJob) { worker(j).Suspend = ptr.To(true) }),
			DeletionPolicyGateOff: true, Layer: "Spec", Field: cs + "workerGroupSpecs[0].suspend", Mentions: "RayJobDeletionPolicy"},
		{Name: "suspended worker group with the feature gate", Job: job(func(j *rayv1.RayJob) { worker(j).Suspend = ptr.To(true) })},
		{Name: "fault tolerance annotation and options", Job: job(func(j *rayv1.RayJob) {
			j.Annotations = map[string]string{rayv1.RayFTEnabledAnnotationKey: "true"}
			j.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
		}), Layer: "Spec", Field: "metadata.annotations[ray.io/ft-enabled]", Mentions: "GcsFaultToleranceOptions"},
		{Name: "fault tolerance options", Job: job(func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
		})},
		{Name: "autoscaler v2 with a restarting head", Job: job(autoscaled, func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
			head(j).RestartPolicy = corev1.RestartPolicyAlways
		}), Layer: "Spec", Field: cs + "headGroupSpec.template.spec.restartPolicy", Mentions: "restartPolicy"},
		{Name: "duplicate worker group names", Job: job(func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.WorkerGroupSpecs = append(j.Spec.RayClusterSpec.WorkerGroupSpecs, *worker(j).DeepCopy())
		}), Layer: "Spec", Field: cs + "workerGroupSpecs[1].groupName", Mentions: "worker group names must be unique"},
		{Name: "worker group without minReplicas and maxReplicas", Job: job(func(j *rayv1.RayJob) {
			worker(j).MinReplicas, worker(j).MaxReplicas = nil, nil
		})},

		// runtime environment, deadlines, retries
		{Name: "runtimeEnvYAML", Job: job(func(j *rayv1.RayJob) {
			j.Spec.RuntimeEnvYAML = "pip:\n  - requests==2.26.0\nenv_vars:\n  counter_name: test_counter\n"
		})},
		{Name: "runtimeEnvYAML that does not parse", Job: job(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "pip: [unclosed" }),
			Layer: "Spec", Field: "spec.runtimeEnvYAML", Mentions: "spec.runtimeEnvYAML"},
		{Name: "runtimeEnvYAML a list", Job: job(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "- pip\n- conda\n" }),
			Layer: "Spec", Field: "spec.runtimeEnvYAML", Mentions: "spec.runtimeEnvYAML"},
		{Name: "runtimeEnvYAML a scalar", Job: job(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "requests" }),
			Layer: "Spec", Field: "spec.runtimeEnvYAML", Mentions: "spec.runtimeEnvYAML"},
		{Name: "runtimeEnvYAML with an infinite number", Job: job(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "env_vars:\n  LIMIT: .inf\n" }),
			Layer: "Spec", Field: "spec.runtimeEnvYAML", Mentions: "spec.runtimeEnvYAML"},
		{Name: "runtimeEnvYAML with a repeated key", Job: job(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "pip: [a]\npip: [b]\n" })},
		{Name: "runtimeEnvYAML null", Job: job(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "null" })},
		{Name: "activeDeadlineSeconds of 0", Job: job(func(j *rayv1.RayJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int32](0) }),
			Layer: "Spec", Field: "spec.activeDeadlineSeconds", Mentions: "spec.activeDeadlineSeconds"},
		{Name: "activeDeadlineSeconds of 1", Job: job(func(j *rayv1.RayJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int32](1) })},
		{Name: "negative preRunningDeadlineSeconds", Job: job(func(j *rayv1.RayJob) { j.Spec.PreRunningDeadlineSeconds = ptr.To[int32](-5) }),
			Layer: "Spec", Field: "spec.preRunningDeadlineSeconds", Mentions: "spec.preRunningDeadlineSeconds"},
		{Name: "preRunningDeadlineSeconds of 1", Job: job(func(j *rayv1.RayJob) { j.Spec.PreRunningDeadlineSeconds = ptr.To[int32](1) })},
		{Name: "negative backoffLimit", Job: job(backoff(-1)),
			Layer: "Spec", Field: "spec.backoffLimit", Mentions: "spec.backoffLimit"},

		// status
		{Name: "Waiting in InteractiveMode", Job: job(mode(rayv1.InteractiveMode), func(j *rayv1.RayJob) {
			j.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusWaiting
		})},
		{Name: "Waiting in K8sJobMode", Job: job(func(j *rayv1.RayJob) { j.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusWaiting }),
			Layer: "Status", Field: "status.jobDeploymentStatus", Mentions: "status.jobDeploymentStatus"},
	}
}
