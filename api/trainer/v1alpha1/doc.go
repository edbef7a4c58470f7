// Package v1alpha1 holds the trainer.kubeflow.org/v1alpha1 API: TrainJob,
// TrainingRuntime and ClusterTrainingRuntime. The group, kinds, JSON field
// names and defaults match Kubeflow Trainer v2.3 so that manifests written for
// Trainer run on Gantry unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=trainer.kubeflow.org
package v1alpha1
