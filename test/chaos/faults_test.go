//go:build chaos

package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/test/testenv"
)

// faultProxy stands between the manager and the API server. Of the
// writes (POST, PUT, PATCH, DELETE) it fails errorRate with a 500, a 429
// or a 409, chosen evenly, without forwarding them; timeoutRate more are
// forwarded, so the write happens, and answered after a delay with a 504,
// the answer of a request that timed out after it was done. Reads and
// watches pass. Leader-election writes are never faulted: their loss is
// the failover scenario's subject, not this one's.
type faultProxy struct {
	errorRate, timeoutRate float64
	proxy                  *httputil.ReverseProxy

	mu       sync.Mutex
	r        *rand.Rand
	injected map[int]int
	// conflicts counts every 409 the manager got: injected and real.
	conflicts int
	writes    int
}

func startFaultProxy(t *testing.T, env *testenv.Env, r *rand.Rand, errorRate, timeoutRate float64) (*faultProxy, []byte) {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	// The proxy acts as the chart's ServiceAccount for the manager.
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = testenv.ChartIdentity(t, env)
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &faultProxy{errorRate: errorRate, timeoutRate: timeoutRate, r: r, injected: map[int]int{}}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
		},
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusConflict {
				f.mu.Lock()
				f.conflicts++
				f.mu.Unlock()
			}
			return nil
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "http://%s"}}]
contexts: [{name: proxy, context: {cluster: proxy, user: proxy}}]
users: [{name: proxy, user: {}}]
current-context: proxy
`, ln.Addr())
	return f, []byte(kubeconfig)
}

func (f *faultProxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	write := req.Method != http.MethodGet && req.Method != http.MethodHead && req.Method != http.MethodOptions
	if !write || strings.Contains(req.URL.Path, "/leases/") {
		f.proxy.ServeHTTP(w, req)
		return
	}
	f.mu.Lock()
	f.writes++
	roll := f.r.Float64()
	code := 0
	switch {
	case roll < f.errorRate:
		code = []int{http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusConflict}[f.r.IntN(3)]
	case roll < f.errorRate+f.timeoutRate:
		code = http.StatusGatewayTimeout
	}
	if code != 0 {
		f.injected[code]++
		if code == http.StatusConflict {
			f.conflicts++
		}
	}
	f.mu.Unlock()

	switch code {
	case 0:
		f.proxy.ServeHTTP(w, req)
		return
	case http.StatusGatewayTimeout:
		// Done, then answered as if it timed out.
		f.proxy.ServeHTTP(discard{header: http.Header{}}, req)
		time.Sleep(2 * time.Second)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	}
	reasons := map[int]metav1.StatusReason{
		http.StatusInternalServerError: metav1.StatusReasonInternalError,
		http.StatusTooManyRequests:     metav1.StatusReasonTooManyRequests,
		http.StatusConflict:            metav1.StatusReasonConflict,
		http.StatusGatewayTimeout:      metav1.StatusReasonTimeout,
	}
	status := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reasons[code], Message: fmt.Sprintf("injected by the chaos proxy: %d", code)}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(status)
}

func (f *faultProxy) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%d writes: %d×500, %d×429, %d×409, %d×504 after the write", f.writes,
		f.injected[500], f.injected[429], f.injected[409], f.injected[504])
}

// discard is a ResponseWriter that drops the answer.
type discard struct{ header http.Header }

func (d discard) Header() http.Header       { return d.header }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
