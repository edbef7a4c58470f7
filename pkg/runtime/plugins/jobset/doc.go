// Package jobset renders a TrainJob onto a JobSet (jobset.x-k8s.io/v1alpha2)
// and maps the JobSet's status back onto the TrainJob.
package jobset
