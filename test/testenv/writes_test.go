package testenv

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestWriteCounterClientCountsSucceededWrites(t *testing.T) {
	ctx := context.Background()
	refuse := errors.New("refused")
	inner := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return refuse },
	})
	w := &WriteCounter{}
	c := w.Client(inner)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	// A patch that changes nothing is still a request.
	if err := c.Patch(ctx, cm, client.MergeFrom(cm.DeepCopy())); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cm); !errors.Is(err, refuse) {
		t.Fatalf("delete: %v", err)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "other"}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := w.InNamespace("ns"); got != 2 {
		t.Errorf("writes in ns = %d, want 2 (create, patch; the refused delete and the read do not count); log %q", got, w.Log())
	}
	if got := w.Total(); got != 3 {
		t.Errorf("total = %d, want 3", got)
	}
	if got := w.ByVerb()["create *v1.ConfigMap"]; got != 2 {
		t.Errorf("creates = %d, want 2: %v", got, w.ByVerb())
	}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string][2]string{
		"/api/v1/namespaces/x/pods/y/status":                 {"pods/status", "x"},
		"/apis/ray.io/v1/namespaces/x/rayclusters":           {"rayclusters", "x"},
		"/apis/coordination.k8s.io/v1/namespaces/k/leases/l": {"leases", "k"},
		"/api/v1/nodes/n": {"nodes", ""},
	} {
		if r, ns := resourceOf(path); r != want[0] || ns != want[1] {
			t.Errorf("resourceOf(%s) = %s, %s; want %v", path, r, ns, want)
		}
	}
}

// TestWrapCountsLeasesUnlessIgnored: Wrap counts every write, Lease
// renewals too, unless IgnoreLeases is set; reads never count.
func TestWrapCountsLeasesUnlessIgnored(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	for _, ignore := range []bool{false, true} {
		w := &WriteCounter{IgnoreLeases: ignore}
		rt, err := rest.TransportFor(w.Wrap(&rest.Config{Host: srv.URL}))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct{ method, path string }{
			{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/k/leases/l"},
			{http.MethodPost, "/api/v1/namespaces/x/pods"},
			{http.MethodGet, "/api/v1/namespaces/x/pods"},
		} {
			req, _ := http.NewRequest(r.method, srv.URL+r.path, nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
		}
		want := int64(2)
		if ignore {
			want = 1
		}
		if got := w.Total(); got != want {
			t.Errorf("IgnoreLeases=%v: %d writes counted, want %d: %v", ignore, got, want, w.ByVerb())
		}
	}
}

// TestProxyCountsProxiedCallsApart: a call through services/proxy (a Ray
// job submitted to a dashboard, then read back) is neither a write nor a
// read of the API server's objects; the proxy counts it apart.
func TestProxyCountsProxiedCallsApart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	w := &WriteCounter{}
	p, err := w.Proxy(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	const svc = "/api/v1/namespaces/x/services/rc-head-svc:dashboard/proxy/api/jobs/"
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, svc},
		{http.MethodGet, svc + "raysubmit_1"},
		{http.MethodPost, "/api/v1/namespaces/x/pods"},
		{http.MethodGet, "/api/v1/namespaces/x/pods"},
	} {
		req, _ := http.NewRequest(r.method, cfg.Host+r.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := w.Total(); got != 1 {
		t.Errorf("%d writes, want 1 (the Pod): %v", got, w.ByVerb())
	}
	if got := p.Reads.Total(); got != 1 {
		t.Errorf("%d reads, want 1 (the Pod list): %v", got, p.Reads.ByVerb())
	}
	if got := p.Proxied.ByVerb(); got["POST services/proxy"] != 1 || got["GET services/proxy"] != 1 || len(got) != 2 {
		t.Errorf("proxied calls %v, want one POST and one GET of services/proxy", got)
	}
}
