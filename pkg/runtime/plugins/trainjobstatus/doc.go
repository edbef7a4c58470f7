// Package trainjobstatus tells a TrainJob's trainer containers where to
// report progress (Kubeflow Trainer v2.3's TrainJobStatus plugin, feature
// gate TrainJobStatus): the endpoint URL, a projected ServiceAccount token
// for the TrainJob's audience, and the CA that signed the endpoint's
// certificate, in a ConfigMap <job>-tls-config owned by the TrainJob.
package trainjobstatus
