package version

// Version is the Gantry release, e.g. "0.1.0". Release and image builds set it
// with -ldflags "-X github.com/gantry-dev/gantry/pkg/version.Version=<version>"
// (see `make image` and the Dockerfile); plain `go build` leaves "dev".
var Version = "dev"
