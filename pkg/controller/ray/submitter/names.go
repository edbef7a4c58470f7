package submitter

import (
	"k8s.io/apimachinery/pkg/util/rand"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// suffixLength is how many random characters KubeRay appends to a RayJob's
// name to name its cluster and its Ray job.
const suffixLength = 5

// ClusterName names a new RayCluster for the RayJob called jobName:
// "<jobName>-<5 random characters>". Each retry of a RayJob gets a new one.
func ClusterName(jobName string) string {
	return withRandomSuffix(jobName)
}

// JobID is a Ray submission ID for the RayJob called jobName, for when
// spec.jobId is unset: "<jobName>-<5 random characters>".
func JobID(jobName string) string {
	return withRandomSuffix(jobName)
}

func withRandomSuffix(name string) string {
	return name + "-" + rand.String(suffixLength)
}

// originLabels sets, on labels (made if nil), the labels that tie what a
// RayJob creates back to it, and returns the map.
func originLabels(labels map[string]string, jobName string) map[string]string {
	if labels == nil {
		labels = make(map[string]string, 3)
	}
	labels[rayv1.RayOriginatedFromCRNameLabelKey] = jobName
	labels[rayv1.RayOriginatedFromCRDLabelKey] = rayv1.RayJobKind
	labels[rayv1.KubernetesCreatedByLabelKey] = rayv1.ComponentName
	return labels
}
