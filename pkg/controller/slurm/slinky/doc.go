// Package slinky holds the conventions of Slinky's slurm-operator that the
// Slurm reconcilers keep: the names and labels of the objects made for each
// kind, the daemons' ports, users, paths, files and pod annotations, the
// content hashes stored in those annotations, and the default images.
//
// Every name and label here is part of Slinky compatibility: users, Helm
// values and dashboards address these objects by these exact strings.
package slinky
