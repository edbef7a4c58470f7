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

// Well-known labels used across all Gantry workloads.
const (
	// LabelManagedBy marks objects Gantry manages. The manager's cache for
	// Pods, Jobs and Services is filtered on this label.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByGantry is the value of LabelManagedBy on every object Gantry creates.
	ManagedByGantry = "gantry"

	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelCreatedBy = "app.kubernetes.io/created-by"
)
