// Package plugin is the plugin framework of the Trainer runtime: the
// intermediate representation (Info) that plugins read and edit, the plugin
// interfaces, one per extension point, and the Framework that runs them in
// the order it was given. Which plugins exist and in which order they run is
// decided by package pkg/runtime; this package knows no plugin. It is
// Trainer's pkg/runtime/framework, named so that it is not mistaken for
// Gantry's reconciler framework, pkg/framework.
package plugin
