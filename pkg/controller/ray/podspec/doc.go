// Package podspec builds a RayCluster's Pods and Services as KubeRay does:
// the head and worker Pods with their `ray start` command, environment,
// probes, the autoscaler sidecar and a batch scheduler's metadata; the head,
// headless and Serve Services; and the names and
// ports other objects refer to (the head Service's name, the autoscaler's
// service account). Everything here is pure: it reads the RayCluster and the
// manager's BuildOptions and returns new objects, never modifying its inputs
// and never calling the API server. The RayCluster controller builds its Pods and
// Services with it, and RayJob (and RayService, to come) their own head
// Service.
package podspec
