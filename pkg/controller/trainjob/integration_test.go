package trainjob

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/runtime"
)

func TestIntegrationRegistersTrainJobAndJobSetTypes(t *testing.T) {
	in := Integration()
	var reg workload.Registry
	if err := reg.Register(in); err != nil {
		t.Fatalf("the integration is not registrable: %v", err)
	}
	if in.Name != "trainjob" {
		t.Errorf("Name = %q, want trainjob (the --controllers value)", in.Name)
	}
	scheme := apiruntime.NewScheme()
	for _, add := range in.AddToScheme {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	for _, obj := range []apiruntime.Object{&trainer.TrainJob{}, &trainer.ClusterTrainingRuntime{}, &trainer.TrainingRuntime{}, &jobsetv1alpha2.JobSet{}} {
		if _, _, err := scheme.ObjectKinds(obj); err != nil {
			t.Errorf("%T is not in the scheme: %v", obj, err)
		}
	}
}

func TestTerminalFailure(t *testing.T) {
	notFound := &runtime.RuntimeNotFoundError{Kind: trainer.TrainingRuntimeKind, Namespace: "ns", Name: "rt"}
	cases := []struct {
		name       string
		err        error
		wantReason string // empty: not terminal
	}{
		{"missing runtime", notFound, trainer.TrainJobRuntimeNotFoundReason},
		{"wrapped missing runtime", fmt.Errorf("resolving: %w", notFound), trainer.TrainJobRuntimeNotFoundReason},
		{"unsupported kind", fmt.Errorf("PyTorchJob.kubeflow.org: %w", runtime.ErrUnsupportedRuntimeKind), trainer.TrainJobRuntimeNotSupportedReason},
		{"unsupported policy", fmt.Errorf("flux: %w", runtime.ErrUnsupportedPolicy), trainer.TrainJobRuntimeNotSupportedReason},
		{"API timeout", apierrors.NewTimeoutError("slow", 1), ""},
		{"conflict", apierrors.NewConflict(trainer.GroupVersion.WithResource("trainjobs").GroupResource(), "x", errors.New("changed")), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := terminalFailure(tc.err)
			if ok != (tc.wantReason != "") || c.Reason != tc.wantReason {
				t.Errorf("terminalFailure() = %v/%q, want terminal=%v reason %q", ok, c.Reason, tc.wantReason != "", tc.wantReason)
			}
			if ok && c.Type != trainer.TrainJobFailed {
				t.Errorf("terminal condition type = %s, want Failed", c.Type)
			}
		})
	}
}

// TestStatusEndpoint: the progress endpoint serves with the webhook
// certificate, so only when the manager serves webhooks; trainer pods reach
// it through the webhook Service unless --trainjob-status-url says otherwise.
func TestStatusEndpoint(t *testing.T) {
	webhooks := workload.WebhookServer{Port: 9443, CertDir: "/certs", Host: "gantry-webhook.gantry-system.svc"}
	for _, tc := range []struct {
		name    string
		flags   Flags
		webhook workload.WebhookServer
		want    statusEndpoint
	}{
		{"the webhook Service", Flags{StatusPort: 10443}, webhooks,
			statusEndpoint{Port: 10443, CertDir: "/certs", BaseURL: "https://gantry-webhook.gantry-system.svc:10443"}},
		{"a URL of the user's", Flags{StatusPort: 10443, StatusURL: "https://trainer.example:443"}, webhooks,
			statusEndpoint{Port: 10443, CertDir: "/certs", BaseURL: "https://trainer.example:443"}},
		{"no webhooks", Flags{StatusPort: 10443}, workload.WebhookServer{}, statusEndpoint{}},
		{"no port", Flags{}, webhooks, statusEndpoint{}},
	} {
		if got := tc.flags.statusEndpoint(tc.webhook); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
