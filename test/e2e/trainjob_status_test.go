//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob/statusserver"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/trainjobstatus"
)

var _ = Describe("TrainJob progress endpoint", Label(labelTrainJob), func() {
	// With the TrainJobStatus gate (make test-e2e turns it on), a running
	// TrainJob's trainer pod is told where to report and carries the CA and
	// a token for the job's audience; a report sent as that pod, over TLS
	// to the manager, shows up in status.trainerStatus. A token for another
	// job's audience is refused.
	It("takes a running pod's progress report into status.trainerStatus", func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		if os.Getenv("GANTRY_TRAINJOB_STATUS") != "true" {
			Skip("the manager runs without the TrainJobStatus feature gate (hack/e2e-local.sh sets GANTRY_TRAINJOB_STATUS=true when it turns it on)")
		}
		ns := newNamespace(ctx, "trainjob-progress")
		rt := torchRuntimeWithPodAnnotations(ctx, ns, "torch-runs-long", map[string]string{"gantry.dev/kwok-run-seconds": "600"})
		tj := trainJobOn(rt, "reports")
		createStrict(ctx, tj)

		var pod corev1.Pod
		Eventually(ctx, func(g Gomega) {
			pods := listPods(g, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name})
			g.Expect(pods).NotTo(BeEmpty())
			g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning))
			pod = pods[0]
		}).Should(Succeed())
		env := map[string]string{}
		for _, e := range pod.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		Expect(env).To(HaveKeyWithValue(trainjobstatus.EnvURL, HaveSuffix(trainjobstatus.Path(ns, tj.Name))))
		Expect(env).To(HaveKeyWithValue(trainjobstatus.EnvToken, trainjobstatus.MountPath+"/token"))

		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: trainjobstatus.ConfigMapName(tj.Name)}, cm)).To(Succeed())
		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM([]byte(cm.Data[trainjobstatus.CACertKey]))).To(BeTrue(), "the CA in %s", cm.Name)

		token := func(audience string) string {
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](600),
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
			}}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Spec.ServiceAccountName}}
			if sa.Name == "" {
				sa.Name = "default"
			}
			Expect(k8s.SubResource("token").Create(ctx, sa, req)).To(Succeed())
			return req.Status.Token
		}
		// The report goes to the URL the pod is told (the chart's Service
		// name, which the serving certificate names), sent to the manager's
		// address here: this machine resolves no Service names.
		endpoint := envOr("GANTRY_TRAINJOB_STATUS_ADDR", "127.0.0.1:"+envOr("GANTRY_TRAINJOB_STATUS_PORT", fmt.Sprint(statusserver.DefaultPort)))
		dialer := &net.Dialer{Timeout: 5 * time.Second}
		https := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, endpoint)
			},
		}}
		send := func(tok string) (int, string) {
			body := `{"trainerStatus":{"progressPercentage":42,"metrics":[{"name":"loss","value":"0.5"}],"lastUpdatedTime":"` + time.Now().UTC().Format(time.RFC3339) + `"}}`
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, env[trainjobstatus.EnvURL], bytes.NewBufferString(body))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := https.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(out)
		}

		code, body := send(token(trainjobstatus.TokenAudience(ns, "someone-else")))
		Expect(code).To(Equal(http.StatusForbidden), body)
		code, body = send(token(trainjobstatus.TokenAudience(ns, tj.Name)))
		Expect(code).To(Equal(http.StatusOK), body)
		Eventually(ctx, func(g Gomega) {
			got := &trainerv1alpha1.TrainJob{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tj), got)).To(Succeed())
			g.Expect(got.Status.TrainerStatus).NotTo(BeNil())
			g.Expect(got.Status.TrainerStatus.ProgressPercentage).To(HaveValue(BeEquivalentTo(42)))
			g.Expect(got.Status.TrainerStatus.Metrics).To(ConsistOf(HaveField("Name", "loss")))
		}).Should(Succeed())
	})
})
