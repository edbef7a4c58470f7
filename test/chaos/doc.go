// Package chaos is the fault tier (`make test-chaos`): the real manager
// binary runs as its own process against a local control plane while the
// harness kills it with SIGKILL, fails over its leader, and injects API
// errors through a proxy, and every workload must still converge to
// exactly what its spec asks for: no duplicate, no orphan, no status that
// claims what is not so. Its tests carry the build tag "chaos", so that
// `go test ./...` (make test) does not run them.
package chaos
