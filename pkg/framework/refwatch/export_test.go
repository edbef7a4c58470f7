package refwatch

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Watched lists the names watched now, sorted. Only tests need it.
func (w *Watcher) Watched() []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := slices.Collect(maps.Keys(w.refs))
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return keys
}
