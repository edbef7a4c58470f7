// Package version holds the Gantry release the manager binary was built from.
package version
