// Package refresolver resolves references from a CR to other objects
// (Secret keys, ConfigMaps, a NodeSet's Controller).
//
// Contract: an empty reference namespace means the referring object's
// namespace (defaultNamespace); a missing object and a missing key inside an
// existing object are both reported as *NotFoundError, told apart by its Key
// field, so callers can write a precise condition message. A NotFoundError for
// a missing object wraps the API server's NotFound, so apierrors.IsNotFound
// still holds. Optional selectors resolve to nothing instead of an error.
package refresolver
