package testenv

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
)

// CountingProxy is a plain-HTTP endpoint on 127.0.0.1 that forwards every
// request to an API server with that server's credentials and counts the
// writes, as WriteCounter.Wrap does. An operator built elsewhere (an
// upstream one, or bin/manager) is pointed at it with Kubeconfig, so its
// writes are counted the same way whoever wrote it.
type CountingProxy struct {
	// Kubeconfig points a client at the proxy; it carries no credentials.
	Kubeconfig []byte
	srv        *http.Server
	// Reads counts the GET requests that are not watches, by resource:
	// they spend the same client rate limit as writes.
	Reads WriteCounter
	// Proxied counts the requests of any verb through the proxy
	// subresource (a Ray dashboard reached through services/proxy):
	// neither reads nor writes of the API server's objects, so counted
	// apart.
	Proxied WriteCounter
}

// Proxy starts a CountingProxy in front of cfg's API server that counts
// into w. Close it when done.
func (w *WriteCounter) Proxy(cfg *rest.Config) (*CountingProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(w.Wrap(cfg))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watches stream
	}
	p := &CountingProxy{
		Kubeconfig: fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "http://%s"}}]
contexts: [{name: proxy, context: {cluster: proxy, user: proxy}}]
users: [{name: proxy, user: {}}]
current-context: proxy
`, ln.Addr()),
	}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		resource, ns := resourceOf(req.URL.Path)
		switch {
		case isProxy(resource):
			p.Proxied.count(req.Method+" "+resource, ns, ns+": "+req.Method+" "+resource)
		case req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true":
			p.Reads.count("GET "+resource, ns, ns+": GET "+resource)
		}
		rp.ServeHTTP(rw, req)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy and ends the watches through it.
func (p *CountingProxy) Close() { _ = p.srv.Close() }
