// Package app is the Gantry manager: flag parsing, manager construction with
// label-filtered caches, health probes and the start of the selected
// workload integrations. cmd/manager/main.go only registers workloads and
// calls Run.
package app
