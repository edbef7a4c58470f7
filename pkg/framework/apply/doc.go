// Package apply is Gantry's server-side apply helper for objects a controller
// owns wholesale (JobSets, Services, RBAC).
//
// Contract: every controller applies under its own field manager (the
// FieldOwner* constants) with ForceOwnership, so fields it set and someone
// else changed are taken back on the next apply (drift correction), while
// fields only another manager set (a label added by a user) are left alone.
// Typed objects are converted to an apply request with apiVersion/kind taken
// from the scheme and status, managedFields, resourceVersion, uid and
// creationTimestamp stripped, so an apply never asserts server-owned state.
//
// Apply always sends a request: deciding locally that an apply would be a
// no-op needs the server's merge of every manager's fields, which cannot be
// reproduced faithfully here. Callers that must avoid the request compare a
// hash of their desired object instead. A repeated apply of the same object
// is a no-op on the server: it does not bump resourceVersion.
package apply
