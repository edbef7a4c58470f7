// Package podspec builds a RayCluster's Pods as KubeRay does: the head and
// worker Pods with their `ray start` command, environment, probes, the
// autoscaler sidecar and a batch scheduler's metadata, and the names and
// ports other objects refer to (the head Service's name, the autoscaler's
// service account). Everything here is pure: it reads the RayCluster and the
// manager's BuildOptions and returns new objects, never modifying its inputs
// and never calling the API server. The RayCluster controller and, later,
// RayJob and RayService build their Pods with it.
package podspec
