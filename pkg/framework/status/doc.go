// Package status writes an object's status only when it really changed.
//
// Contract of Update: the new status is computed by mutate on a deep copy of
// the object; it is written through the status subresource only when it
// differs from the old one in a field that matters. By default timestamps
// that merely record when something was observed (fields named
// lastTransitionTime, lastUpdateTime, lastProbeTime, lastHeartbeatTime) are
// ignored, so a reconcile that only refreshes them makes no write; a caller can
// supply its own equality instead. On a Conflict the object is read again and
// mutate is re-run on the fresh copy, so mutate must be a pure function of the
// object it receives. The caller's object is updated to what was written.
//
// The write is a JSON merge patch of the status subresource holding only
// what changed in the status, with the object's resourceVersion as a
// precondition: a Conflict when the object moved, as an Update gives, and
// the same result, since the status it is computed from is the server's at
// that version.
package status
