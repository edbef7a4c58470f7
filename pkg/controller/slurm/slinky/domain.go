package slinky

import (
	"bufio"
	"os"
	"strings"
	"sync"
)

// DefaultClusterDomain is the cluster's DNS domain when the manager's
// resolver names none.
const DefaultClusterDomain = "cluster.local"

var clusterDomain = sync.OnceValue(func() string { return clusterDomainFrom("/etc/resolv.conf") })

// ClusterDomain is the cluster's DNS domain, found as Slinky finds it
// (internal/utils/domainname): the first search domain of the manager's
// /etc/resolv.conf that starts with "svc.", less that prefix. A manager in
// a pod has <namespace>.svc.<domain> and svc.<domain> there; one outside
// the cluster (make run) has none, and gets DefaultClusterDomain. Read
// once per process.
func ClusterDomain() string { return clusterDomain() }

func clusterDomainFrom(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return DefaultClusterDomain
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 || fields[0] != "search" {
			continue
		}
		for _, d := range fields[1:] {
			if after, ok := strings.CutPrefix(d, "svc."); ok && after != "" {
				return strings.TrimSuffix(after, ".")
			}
		}
	}
	return DefaultClusterDomain
}

// ServiceFQDN is <service>.<namespace>.svc.<cluster domain>.
func ServiceFQDN(service, namespace string) string {
	return service + "." + namespace + ".svc." + ClusterDomain()
}
