package refwatch

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// TestStoppedWatcherForgetsOnlyItself: when one of a manager's Watchers
// stops, For must still hand out the manager's other Watchers, not make a
// second one of their kind beside the first.
func TestStoppedWatcherForgetsOnlyItself(t *testing.T) {
	var mgr manager.Manager = struct{ manager.Manager }{} // only a map key here
	secrets := &Watcher{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, refs: map[types.NamespacedName]*ref{}}
	configMaps := &Watcher{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, refs: map[types.NamespacedName]*ref{}}
	watchersMu.Lock()
	watchers[mgr] = map[schema.GroupVersionKind]*Watcher{secrets.gvk: secrets, configMaps.gvk: configMaps}
	watchersMu.Unlock()
	t.Cleanup(func() {
		watchersMu.Lock()
		delete(watchers, mgr)
		watchersMu.Unlock()
	})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := secrets.Start(ctx); err != nil {
		t.Fatal(err)
	}
	watchersMu.Lock()
	left := watchers[mgr]
	watchersMu.Unlock()
	if left[configMaps.gvk] != configMaps {
		t.Errorf("the ConfigMap Watcher was forgotten with the Secret one: %v", left)
	}
	if _, kept := left[secrets.gvk]; kept {
		t.Errorf("the stopped Secret Watcher is still handed out: %v", left)
	}

	if err := configMaps.Start(ctx); err != nil {
		t.Fatal(err)
	}
	watchersMu.Lock()
	_, kept := watchers[mgr]
	watchersMu.Unlock()
	if kept {
		t.Error("the manager is still remembered after its last Watcher stopped")
	}
}
