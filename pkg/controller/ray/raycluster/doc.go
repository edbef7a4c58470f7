// Package raycluster reconciles KubeRay-compatible RayClusters on the
// framework's reconcile skeleton: it loads the cluster's Pods once, creates
// and deletes them (built by package podspec) with expectations, keeps the
// Services, Ingress, RBAC, auth Secret and PodGroup, runs the GCS
// fault-tolerance finalizer, and writes the status once per reconcile.
// Validation is package validation's, shared with the webhook.
package raycluster
