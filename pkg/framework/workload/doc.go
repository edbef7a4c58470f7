// Package workload is the registry through which workload families plug
// into the single Gantry manager.
//
// A workload contributes its API types, the label values its managed Pods,
// Jobs and Services carry (so the manager's label-filtered cache sees them),
// the feature gates and command-line flags it reads and a Setup function
// that wires its reconcilers into the manager. cmd/manager only parses flags and starts the integrations
// named by --controllers; adding a workload is a new package plus one
// Register call.
package workload
