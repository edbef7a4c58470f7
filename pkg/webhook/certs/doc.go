// Package certs gives the manager's admission webhook server its serving
// certificate without cert-manager: a self-signed CA and a serving
// certificate kept in a Secret, injected as caBundle into Gantry's webhook
// configurations and rotated before they expire
// (github.com/open-policy-agent/cert-controller, as Kubeflow Trainer uses).
// With Mode external the certificate files are provided by someone else
// (cert-manager writing the Secret the chart mounts) and Gantry only waits
// for them.
package certs
