// Package statusserver is the TrainJob progress endpoint of Kubeflow
// Trainer v2.3 (KEP-2779, feature gate TrainJobStatus): training code POSTs
// its progress, remaining time and metrics to
//
//	https://<service>:10443/apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status
//
// with a projected ServiceAccount token whose audience names that TrainJob,
// and the server writes them to the TrainJob's status.trainerStatus.
//
// Authentication goes through a TokenReview with the TrainJob's audience,
// so the API server checks the signature, expiry and audience. Trainer then
// only requires the token's namespace to be the TrainJob's; Gantry also
// requires the token to be bound to a Pod of that TrainJob's JobSet, so
// another workload of the namespace cannot report for it.
package statusserver
