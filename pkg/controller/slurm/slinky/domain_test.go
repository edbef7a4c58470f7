package slinky

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClusterDomainFrom: the domain comes from the first "svc." search
// domain of resolv.conf, as Slinky reads it; without one, or without the
// file, it is cluster.local.
func TestClusterDomainFrom(t *testing.T) {
	tests := []struct{ name, conf, want string }{
		{"a pod's resolver", "search slurm.svc.k8s.example svc.k8s.example k8s.example\nnameserver 10.96.0.10\noptions ndots:5\n", "k8s.example"},
		{"the default domain", "search ns.svc.cluster.local svc.cluster.local cluster.local\n", "cluster.local"},
		{"a host outside the cluster", "nameserver 10.255.255.53\n", DefaultClusterDomain},
		{"search without svc.", "search example.org\n", DefaultClusterDomain},
		{"a trailing dot", "search svc.k8s.example.\n", "k8s.example"},
		{"a commented line", "# search svc.other\nsearch svc.k8s.example\n", "k8s.example"},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "resolv.conf")
		if err := os.WriteFile(path, []byte(tt.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := clusterDomainFrom(path); got != tt.want {
			t.Errorf("%s: clusterDomainFrom = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := clusterDomainFrom(filepath.Join(t.TempDir(), "none")); got != DefaultClusterDomain {
		t.Errorf("no file: %q", got)
	}
}
