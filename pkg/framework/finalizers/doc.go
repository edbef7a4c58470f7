// Package finalizers adds and removes an object's finalizers without ever
// dropping one another controller added meanwhile.
//
// Contract: a change is sent as a merge patch of metadata.finalizers that
// carries the resourceVersion it was computed from. A merge patch replaces
// the whole list, so without the lock a finalizer another controller added
// since our read would be lost; with it the API server answers Conflict,
// and the caller's next reconcile starts from a fresh read. Nothing is sent
// when the finalizer is already as asked. On success obj is what the server
// returned.
package finalizers
