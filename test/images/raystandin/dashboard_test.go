package main

import (
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	k8sjson "k8s.io/apimachinery/pkg/util/json"

	"github.com/gantry-dev/gantry/test/syncbuf"
)

func TestHeadEndpoints(t *testing.T) {
	_, ports := startTestHead(t)
	get := func(url string) string {
		t.Helper()
		body, err := httpGetBody(url)
		if err != nil {
			t.Error(err)
		}
		return body
	}
	if b := get(ports.dashboardURL() + "/api/gcs_healthz"); b != "success" {
		t.Errorf("gcs_healthz = %q", b)
	}
	var version map[string]any
	if err := json.Unmarshal([]byte(get(ports.dashboardURL()+"/api/version")), &version); err != nil || version["ray_version"] != "standin" {
		t.Errorf("version = %v (%v), want ray_version standin", version, err)
	}
	agent := "http://127.0.0.1:" + strconv.Itoa(ports.agent)
	for _, p := range []string{"/api/local_raylet_healthz", "/api/healthz"} {
		if b := get(agent + p); b != "success" {
			t.Errorf("agent %s = %q", p, b)
		}
	}
	metrics := get("http://127.0.0.1:" + strconv.Itoa(ports.metrics) + "/metrics")
	if !strings.Contains(metrics, "# TYPE ray_standin_node_up gauge\nray_standin_node_up{node_type=\"head\"} 1\n") {
		t.Errorf("metrics = %q", metrics)
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(ports.client), time.Second)
	if err != nil {
		t.Errorf("client port: %v", err)
	} else {
		c.Close()
	}
	if code, body := httpDo(t, http.MethodGet, ports.dashboardURL()+"/api/cluster_status", nil); code != http.StatusNotFound || !strings.HasPrefix(string(body), logPrefix) {
		t.Errorf("unknown dashboard path = %d %q, want a 404 naming the stand-in", code, body)
	}
	if b := get("http://" + ports.gcsAddr() + gcsDashboardPath); b != ports.dashboardURL() {
		t.Errorf("dashboard address from the GCS = %q, want %q", b, ports.dashboardURL())
	}
}

func TestServeProxyHealth(t *testing.T) {
	serve := freePort(t)
	t.Setenv(envServePort, strconv.Itoa(serve))
	o, err := parseStartArgs(newHeadPorts(t).args())
	if err != nil {
		t.Fatal(err)
	}
	n, err := startNode(t.Context(), o, newLogger(&syncbuf.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if b, err := httpGetBody("http://127.0.0.1:" + strconv.Itoa(serve) + "/-/healthz"); err != nil || b != "success" {
		t.Errorf("serve proxy /-/healthz = %q %v", b, err)
	}
}

func TestServeAPI(t *testing.T) {
	_, ports := startTestHead(t)
	url := ports.dashboardURL() + "/api/serve/applications/?api_type=declarative"
	details := func() (kuberayServeDetails, map[string]any) {
		t.Helper()
		code, body := httpDo(t, http.MethodGet, url, nil)
		var d kuberayServeDetails
		var raw map[string]any
		if err := k8sjson.Unmarshal(body, &d); code != http.StatusOK || err != nil {
			t.Fatalf("GET serve details: %d %s %v", code, body, err)
		}
		_ = json.Unmarshal(body, &raw)
		return d, raw
	}
	if d, _ := details(); d.Applications == nil || len(d.Applications) != 0 {
		t.Errorf("before any deploy: %+v, want an empty applications object", d)
	}

	config := map[string]any{
		"http_options": map[string]any{"host": "0.0.0.0", "port": 8000},
		"applications": []any{
			map[string]any{"name": "fruit", "route_prefix": "/fruit", "import_path": "fruit:app",
				"deployments": []any{map[string]any{"name": "MangoStand"}, map[string]any{"name": "FruitMarket"}}},
			map[string]any{"import_path": "calc:app"},
		},
	}
	if code, body := httpDo(t, http.MethodPut, url, config); code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, body)
	}
	d, raw := details()
	if len(d.Applications) != 2 {
		t.Fatalf("applications = %+v, want fruit and default", d.Applications)
	}
	fruit := d.Applications["fruit"]
	if fruit.Status != "RUNNING" || fruit.RoutePrefix != "/fruit" || fruit.Name != "fruit" {
		t.Errorf("fruit = %+v", fruit)
	}
	for _, name := range []string{"MangoStand", "FruitMarket"} {
		if dep := fruit.Deployments[name]; dep.Status != "HEALTHY" || dep.Name != name {
			t.Errorf("deployment %s = %+v, want HEALTHY", name, dep)
		}
	}
	if def := d.Applications["default"]; def.Status != "RUNNING" || def.RoutePrefix != "/" {
		t.Errorf("unnamed application = %+v, want default at /", def)
	}
	// What KubeRay's ConvertServeDetailsToApplicationStatuses reads.
	apps := raw["applications"].(map[string]any)
	requireJSONKeys(t, "application", apps["fruit"].(map[string]any), reflect.TypeFor[kuberayServeApplicationStatus]())
	deployed := apps["fruit"].(map[string]any)["deployed_app_config"].(map[string]any)
	if deployed["import_path"] != "fruit:app" {
		t.Errorf("deployed_app_config = %v, want the PUT application echoed", deployed)
	}
	if !reflect.DeepEqual(raw["http_options"], map[string]any{"host": "0.0.0.0", "port": 8000.0}) {
		t.Errorf("http_options = %v", raw["http_options"])
	}

	for name, bad := range map[string]any{
		"no applications": map[string]any{"http_options": map[string]any{}},
		"duplicate name":  map[string]any{"applications": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}},
	} {
		if code, _ := httpDo(t, http.MethodPut, url, bad); code != http.StatusBadRequest {
			t.Errorf("PUT %s = %d, want 400", name, code)
		}
	}
	if code, _ := httpDo(t, http.MethodDelete, url, nil); code != http.StatusOK {
		t.Errorf("DELETE = %d", code)
	}
	if d, _ := details(); len(d.Applications) != 0 {
		t.Errorf("after DELETE: %+v", d.Applications)
	}
}

func TestDashboardTokenAuth(t *testing.T) {
	t.Setenv("RAY_AUTH_MODE", "token")
	t.Setenv("RAY_AUTH_TOKEN", "s3cret")
	_, ports := startTestHead(t)
	base := ports.dashboardURL()
	if code, _ := httpDo(t, http.MethodGet, base+"/api/jobs/", nil); code != http.StatusUnauthorized {
		t.Errorf("jobs without a token = %d, want 401", code)
	}
	for _, header := range []string{"x-ray-authorization", "Authorization"} {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/serve/applications/", nil)
		req.Header.Set(header, "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("with %s = %d, want 200", header, resp.StatusCode)
		}
	}
	if _, err := httpGetBody(base + "/api/gcs_healthz"); err != nil {
		t.Errorf("health needs no token: %v", err)
	}
	// The CLI sends RAY_AUTH_TOKEN.
	if code, _, errOut := runCLI("job", "submit", "--address", base, "--", "true"); code != 0 {
		t.Errorf("ray job submit with RAY_AUTH_TOKEN = %d %s", code, errOut)
	}
	t.Setenv("RAY_AUTH_TOKEN", "wrong")
	if code, _, errOut := runCLI("job", "list", "--address", base); code != 1 || !strings.Contains(errOut, "401") {
		t.Errorf("ray job list with a wrong token = %d %q, want 1 and the 401", code, errOut)
	}
}
