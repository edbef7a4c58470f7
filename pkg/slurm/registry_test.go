package slurm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// stubClient is a Client that remembers the Config it was built from.
type stubClient struct {
	Client
	cfg    Config
	closed bool
}

func (s *stubClient) CloseIdleConnections() { s.closed = true }

func stubFactory(cfg Config) (Client, error) { return &stubClient{cfg: cfg}, nil }

func TestRegistrySetReplacesOnlyOnChange(t *testing.T) {
	base := Config{URL: "http://restapi.slurm:6820", UserName: "slurm", JWTKey: []byte("key-1")}
	tests := []struct {
		name        string
		next        func(Config) Config
		wantReplace bool
	}{
		{"same config", func(c Config) Config { return c }, false},
		{"same key in a new buffer", func(c Config) Config { c.JWTKey = []byte("key-1"); return c }, false},
		{"trailing slash on the URL", func(c Config) Config { c.URL += "/"; return c }, false},
		{"empty user means the default", func(c Config) Config { c.UserName = ""; return c }, false},
		{"tuning only", func(c Config) Config { c.RequestTimeout = time.Minute; c.TokenLifetime = time.Hour; return c }, false},
		{"new key", func(c Config) Config { c.JWTKey = []byte("key-2"); return c }, true},
		{"new service", func(c Config) Config { c.URL = "http://restapi-2.slurm:6820"; return c }, true},
		{"new user", func(c Config) Config { c.UserName = "root"; return c }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := NewRegistry(stubFactory)
			key := types.NamespacedName{Namespace: "slurm", Name: "slurm"}
			if changed, err := reg.Set(key, base); err != nil || !changed {
				t.Fatalf("first Set = %v, %v; want created", changed, err)
			}
			first, _ := reg.Get(key)

			changed, err := reg.Set(key, tc.next(base))
			if err != nil {
				t.Fatal(err)
			}
			second, _ := reg.Get(key)
			if changed != tc.wantReplace || (first != second) != tc.wantReplace {
				t.Errorf("changed = %v, client replaced = %v; want %v", changed, first != second, tc.wantReplace)
			}
			if got := first.(*stubClient).closed; got != tc.wantReplace {
				t.Errorf("old client's idle connections closed = %v, want %v", got, tc.wantReplace)
			}
		})
	}
}

func TestRegistryKeepsOldClientWhenFactoryFails(t *testing.T) {
	fail := false
	reg := NewRegistry(func(cfg Config) (Client, error) {
		if fail {
			return nil, errors.New("boom")
		}
		return stubFactory(cfg)
	})
	key := types.NamespacedName{Namespace: "a", Name: "ctld"}
	if _, err := reg.Set(key, Config{URL: "http://one", JWTKey: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	fail = true
	if _, err := reg.Set(key, Config{URL: "http://two", JWTKey: []byte("k")}); err == nil {
		t.Fatal("Set succeeded, want the factory's error")
	}
	c, ok := reg.Get(key)
	if !ok || c.(*stubClient).cfg.URL != "http://one" {
		t.Errorf("Get = %v, %v; want the previous client", c, ok)
	}
}

func TestRegistryGetDelete(t *testing.T) {
	reg := NewRegistry(stubFactory)
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "other", Name: "a"}
	if _, err := reg.Set(a, Config{URL: "http://a", JWTKey: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get(b); ok {
		t.Error("a Controller of the same name in another namespace shares the client")
	}
	if !reg.Delete(a) {
		t.Error("Delete(a) = false, want true")
	}
	if _, ok := reg.Get(a); ok {
		t.Error("client still there after Delete")
	}
	if reg.Delete(a) {
		t.Error("second Delete(a) = true, want false")
	}
	if reg.Len() != 0 {
		t.Errorf("Len = %d, want 0", reg.Len())
	}
}

func TestRegistryBuildsRealClients(t *testing.T) {
	reg := NewRegistry(nil)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	if _, err := reg.Set(key, Config{URL: "http://a:6820", JWTKey: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if c, _ := reg.Get(key); c == nil {
		t.Fatal("no client")
	}
	if _, err := reg.Set(key, Config{URL: "not a url", JWTKey: []byte("k")}); err == nil {
		t.Error("Set accepted an invalid URL")
	}
}

// TestRegistryConcurrentUse is meaningful under -race: reconcilers of many
// Controllers and NodeSets use one registry at once.
func TestRegistryConcurrentUse(t *testing.T) {
	reg := NewRegistry(nil)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("c%d", i%5)}
				switch (w + i) % 4 {
				case 0, 1:
					cfg := Config{URL: fmt.Sprintf("http://c%d-%d", i%5, i%3), JWTKey: []byte("k")}
					if _, err := reg.Set(key, cfg); err != nil {
						t.Error(err)
						return
					}
				case 2:
					if c, ok := reg.Get(key); ok && c == nil {
						t.Error("Get returned ok with a nil client")
						return
					}
				case 3:
					reg.Delete(key)
				}
			}
		})
	}
	wg.Wait()
	if reg.Len() > 5 {
		t.Errorf("Len = %d, want at most 5 keys", reg.Len())
	}
}

// The registry hands out Clients that the NodeSet reconciler calls while
// the RestApi reconciler replaces them; a replaced client keeps working.
func TestReplacedClientStillServesInFlightCallers(t *testing.T) {
	srv := newRestd(t, map[string]route{"GET /slurm/v0.0.44/ping": {status: 200, fixture: "ping.json"}})
	reg := NewRegistry(nil)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	serverClock := func() time.Time { return srv.now }
	if _, err := reg.Set(key, Config{URL: srv.server.URL, JWTKey: testKey, Now: serverClock}); err != nil {
		t.Fatal(err)
	}
	old, _ := reg.Get(key)
	if _, err := reg.Set(key, Config{URL: srv.server.URL + "/", UserName: "root", JWTKey: testKey, Now: serverClock}); err != nil {
		t.Fatal(err)
	}
	if err := old.Ping(context.Background()); err != nil {
		t.Errorf("replaced client: %v", err)
	}
}
