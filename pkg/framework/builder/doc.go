// Package builder holds pure builders for object metadata, pod templates and
// the common owned objects (Services, PDBs, ConfigMaps). Builders never mutate
// their inputs and never return values that share memory with them.
//
// Merge contract (MergePodTemplate, MergeContainer, MergeLabels): operator
// defaults sit under user values, except labels and annotations, where the
// operator's keys win because selectors and hashes depend on them. Keyed
// lists merge by key: containers, env and volumes by name, ports by name,
// volume mounts by mount path.
package builder
