// Package features names KubeRay's feature gates that Gantry's Ray
// controllers read, with KubeRay's names and defaults, so a user's
// --feature-gates carries over.
package features
