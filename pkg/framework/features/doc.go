// Package features holds the manager's feature gates, built on
// k8s.io/component-base/featuregate so `--feature-gates=A=true,B=false`
// behaves as in Kubernetes components and upstream operators.
//
// Contract: a Gate is created per process with New (there is no package-level
// gate); each workload integration registers its own specs with Register
// before the flag is bound; AddFlag binds `--feature-gates` and closes
// registration; reconcilers read gates through the read-only Reader. Setting
// an unknown gate is an error; asking Enabled about an unregistered gate
// panics, as in component-base, because it is a programming error.
package features
