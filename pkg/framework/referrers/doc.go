// Package referrers turns watch events into reconcile requests through the
// manager's cache: the objects that reference the one that changed, found
// by a field index.
package referrers
