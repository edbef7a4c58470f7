package statusserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/trainjobstatus"
	"github.com/gantry-dev/gantry/test/testenv"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// fixture is a namespace with a TrainJob "tj", a ServiceAccount, a Pod of
// tj's JobSet and a Pod of another workload, both running as that account.
type fixture struct {
	env       *testenv.Env
	ns        string
	job, peer *corev1.Pod
}

func setup(t *testing.T) *fixture {
	t.Helper()
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme}})
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "status-"}}
	must(t, env.Client.Create(ctx, ns))
	f := &fixture{env: env, ns: ns.Name}
	must(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "trainer"}}))
	tj := trainertesting.MakeTrainJob("tj", f.ns).RuntimeRef(trainer.ClusterTrainingRuntimeKind, "torch-distributed").Obj()
	tj.UID = ""
	must(t, env.Client.Create(ctx, tj))
	pod := func(name, jobSet string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: jobSet}},
			Spec:       corev1.PodSpec{ServiceAccountName: "trainer", Containers: []corev1.Container{{Name: "node", Image: "torch"}}},
		}
		must(t, env.Client.Create(ctx, p))
		return p
	}
	f.job, f.peer = pod("tj-node-0-0-abcde", "tj"), pod("other-node-0-0-fghij", "other")
	return f
}

// token asks the API server for a token bound to pod, for audience.
func (f *fixture) token(t *testing.T, pod *corev1.Pod, audience string) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         []string{audience},
		ExpirationSeconds: ptr.To[int64](600),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "trainer"}}
	must(t, f.env.Client.SubResource("token").Create(context.Background(), sa, req))
	return req.Status.Token
}

func post(t *testing.T, h http.Handler, path, token, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

const report = `{"trainerStatus":{"progressPercentage":42,"estimatedRemainingSeconds":600,"metrics":[{"name":"loss","value":"0.31"}],"lastUpdatedTime":"2026-11-24T10:00:00Z"}}`

// TestStatusReports: a token the API server issued for the TrainJob's
// audience, bound to a Pod of its JobSet, may report; the report lands in
// status.trainerStatus under field manager trainer-status. Any other token
// is refused with 403 and writes nothing; a report the schema refuses is a
// 422 that says why.
func TestStatusReports(t *testing.T) {
	f := setup(t)
	s := &Server{Client: f.env.Client, Reader: f.env.Client}
	h := s.Handler()
	path := trainjobstatus.Path(f.ns, "tj")
	audience := trainjobstatus.TokenAudience(f.ns, "tj")

	refused := map[string]string{
		"no token":                            "",
		"not a token":                         "garbage",
		"another TrainJob's audience":         f.token(t, f.job, trainjobstatus.TokenAudience(f.ns, "other")),
		"the API server's audience":           f.token(t, f.job, "https://kubernetes.default.svc"),
		"a Pod of another JobSet, right aud.": f.token(t, f.peer, audience),
	}
	for name, token := range refused {
		if code, body := post(t, h, path, token, report); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", name, code, body)
		}
	}
	got := &trainer.TrainJob{}
	must(t, f.env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "tj"}, got))
	if got.Status.TrainerStatus != nil {
		t.Fatalf("a refused report was written: %+v", got.Status.TrainerStatus)
	}

	token := f.token(t, f.job, audience)
	if code, body := post(t, h, path, token, report); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	must(t, f.env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "tj"}, got))
	ts := got.Status.TrainerStatus
	if ts == nil || ptr.Deref(ts.ProgressPercentage, -1) != 42 || ptr.Deref(ts.EstimatedRemainingSeconds, -1) != 600 ||
		len(ts.Metrics) != 1 || ts.Metrics[0].Name != "loss" || ts.Metrics[0].Value != "0.31" {
		t.Fatalf("trainerStatus %+v", ts)
	}
	owners := []string{}
	for _, m := range got.ManagedFields {
		if m.Subresource == "status" {
			owners = append(owners, m.Manager)
		}
	}
	if fmt.Sprint(owners) != "[trainer-status]" {
		t.Errorf("status field managers %v, want [trainer-status]", owners)
	}

	if code, body := post(t, h, path, token, strings.Replace(report, "42", "150", 1)); code != http.StatusUnprocessableEntity || !strings.Contains(body, "progressPercentage") {
		t.Errorf("progress 150: %d %s, want 422 naming progressPercentage", code, body)
	}
	// Fields it does not know are ignored, as Trainer's decoder does: a
	// newer SDK's report still lands.
	newer := strings.Replace(strings.Replace(report, "42", "43", 1), `{"trainerStatus":{`, `{"reporter":"sdk-9","trainerStatus":{"bogus":1,`, 1)
	if code, body := post(t, h, path, token, newer); code != http.StatusOK {
		t.Errorf("a report with unknown fields: %d %s, want 200", code, body)
	} else {
		must(t, f.env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "tj"}, got))
		if p := ptr.Deref(got.Status.TrainerStatus.ProgressPercentage, -1); p != 43 {
			t.Errorf("after a report with unknown fields, progress %d, want 43", p)
		}
	}
	if code, _ := post(t, h, "/apis/other", token, report); code != http.StatusNotFound {
		t.Errorf("unknown path: %d, want 404", code)
	}
}

// TestServesTLSWithTheWebhookCertificate: Start waits for the certificate
// files in CertDir, then serves the endpoint over TLS with them.
func TestServesTLSWithTheWebhookCertificate(t *testing.T) {
	f := setup(t)
	dir := t.TempDir()
	port := testenv.FreePort(t)
	s := &Server{Client: f.env.Client, Reader: f.env.Client, Port: port, CertDir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	time.Sleep(500 * time.Millisecond) // Start is waiting for the files
	pool := testenv.WriteServingCert(t, dir)

	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	url := fmt.Sprintf("https://localhost:%d%s", port, trainjobstatus.Path(f.ns, "tj"))
	var resp *http.Response
	var err error
	for range 50 {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(report))
		req.Header.Set("Authorization", "Bearer "+f.token(t, f.job, trainjobstatus.TokenAudience(f.ns, "tj")))
		if resp, err = c.Do(req); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var echo UpdateRequest
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&echo) != nil || echo.TrainerStatus == nil {
		t.Fatalf("HTTPS report: %s", resp.Status)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
