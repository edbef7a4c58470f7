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
