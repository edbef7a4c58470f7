// Package index holds the cache field indexes the Slurm reconcilers share,
// behind their mapped watches ("which Controllers read this Secret",
// "which NodeSets join this Controller"), and registers them.
package index
