// Package common holds what the Slurm reconcilers (Controller, RestApi,
// NodeSet) share: Slinky's well-known names, labels, ports and file paths,
// the naming of generated objects, the pieces of pod specs every Slurm
// daemon uses, key hashing and the field indexes behind the mapped watches.
//
// Every name and label here is part of Slinky compatibility: users, Helm
// values and dashboards address these objects by these exact strings.
package common
