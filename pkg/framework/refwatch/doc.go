// Package refwatch watches, each by its name, the objects of one kind
// (Secrets, ConfigMaps) that the specs of other objects reference, and
// nothing else of that kind.
//
// A workload may read keys from the user's Secrets and files from the
// user's ConfigMaps, which carry no label Gantry could select.
// Watching every Secret and ConfigMap of the cluster to notice when one of
// those few changes would make Gantry's memory, and its start-up, grow with
// objects that are not its own. A Watcher instead follows the holders (the
// objects whose specs name references, through the manager's cache), and
// runs one metadata-only informer per referenced name (a field selector on
// metadata.name), started when the first holder names it and stopped when
// the last one stops naming it. An unrelated object is never sent to the
// manager.
//
// A change of a referenced object (its creation, any update, its deletion)
// reaches every Source made by Source, as a generic event carrying the
// object's metadata, and the Source's handler maps it to requests as a
// watch's handler would.
package refwatch
