//go:build e2e

package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// credentialKeyWords name the Secret keys whose values are credentials: JWT
// and Slurm keys, tokens, passwords (Redis's for GCS fault tolerance), SSH
// and TLS private keys. None of their values may appear in the manager's
// log or in an event.
var credentialKeyWords = []string{"jwt", "key", "token", "password", "passwd", "auth"}

// credentials collects, on process 1 for the whole run, every credential
// value a Secret held and every event message, so that the end of the run
// can search the manager's whole log and every event for them, namespaces
// deleted by their specs included.
type credentials struct {
	mu     sync.Mutex
	values map[string]string // value → "namespace/name key"
	notes  []string          // event messages
	stop   chan struct{}
}

var seen = &credentials{values: map[string]string{}, stop: make(chan struct{})}

func (c *credentials) start() error {
	factory := informers.NewSharedInformerFactory(clientset, 0)
	secrets := factory.Core().V1().Secrets().Informer()
	events := factory.Core().V1().Events().Informer()
	onSecret := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for k, v := range s.Data {
			if len(v) >= 8 && isCredentialKey(k) {
				c.values[string(v)] = fmt.Sprintf("%s/%s %s", s.Namespace, s.Name, k)
			}
		}
	}
	onEvent := func(obj any) {
		if e, ok := obj.(*corev1.Event); ok {
			c.mu.Lock()
			c.notes = append(c.notes, e.Message)
			c.mu.Unlock()
		}
	}
	if _, err := secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onSecret, UpdateFunc: func(_, o any) { onSecret(o) }}); err != nil {
		return err
	}
	if _, err := events.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onEvent, UpdateFunc: func(_, o any) { onEvent(o) }}); err != nil {
		return err
	}
	factory.Start(c.stop)
	for typ, ok := range factory.WaitForCacheSync(c.stop) {
		if !ok {
			return fmt.Errorf("watching %v did not sync", typ)
		}
	}
	return nil
}

func isCredentialKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range credentialKeyWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// leaks names the credentials found in text, raw or base64-encoded (as a
// dumped Secret would show them).
func (c *credentials) leaks(text string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for v, where := range c.values {
		if strings.Contains(text, v) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(v))) {
			out = append(out, where)
		}
	}
	sort.Strings(out)
	return out
}

// After every process's specs (process 1): the chart's dashboards and
// alerts read only series the manager exported (chartmetrics_test.go), and
// no credential is in the manager's log or in an event of the whole run.
var _ = SynchronizedAfterSuite(func() {}, func(ctx SpecContext) {
	checkChartMetrics(ctx)
	checkCredentials()
})

// checkCredentials: no credential in the manager's log or in an event of
// the whole run.
func checkCredentials() {
	close(seen.stop)
	seen.mu.Lock()
	n := len(seen.values)
	events := strings.Join(seen.notes, "\n")
	seen.mu.Unlock()
	if n == 0 {
		Fail("e2e: no credential was seen in any Secret during the run; the check for leaked credentials would be vacuous")
	}
	if leaked := seen.leaks(events); len(leaked) > 0 {
		Fail(fmt.Sprintf("e2e: credentials appear in event messages: %v", leaked))
	}
	path := managerLogPath()
	if path == "" {
		AddReportEntry("credentials in the manager log", "not checked: no manager log (GANTRY_MANAGER_LOG unset and no local control plane)")
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		Fail(fmt.Sprintf("e2e: reading the manager log %s: %v", path, err))
	}
	if leaked := seen.leaks(string(data)); len(leaked) > 0 {
		Fail(fmt.Sprintf("e2e: credentials appear in the manager log %s: %v", path, leaked))
	}
	AddReportEntry("credentials in the manager log and events", fmt.Sprintf("%d credential values, %d events, %d bytes of log: none found", n, len(seen.notes), len(data)))
}
