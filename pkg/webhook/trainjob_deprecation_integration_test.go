package webhook

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// warningRecorder collects the warnings the API server sends back: the
// controller-runtime client hands each to the logger of the request's
// context (log.KubeAPIWarningLogger), which this one is.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) context(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.New(w))
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}

// warningRecorder is a logr.LogSink that keeps the message of each Info.
var _ logr.LogSink = (*warningRecorder)(nil)

func (w *warningRecorder) Init(logr.RuntimeInfo)          {}
func (w *warningRecorder) Enabled(level int) bool         { return level == 0 }
func (w *warningRecorder) Error(error, string, ...any)    {}
func (w *warningRecorder) WithValues(...any) logr.LogSink { return w }
func (w *warningRecorder) WithName(string) logr.LogSink   { return w }

func (w *warningRecorder) Info(_ int, msg string, _ ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, msg)
}

// TestDeprecatedRuntimeWarningThroughAPIServer: through a real API server
// and the webhook configuration Gantry ships, creating and updating a
// TrainJob that references a ClusterTrainingRuntime labelled
// trainer.kubeflow.org/support: deprecated returns Trainer v2.3's warning
// to the client, as kubectl prints it ("Warning: Referenced
// ClusterTrainingRuntime ..."); a TrainJob of another runtime gets none.
func TestDeprecatedRuntimeWarningThroughAPIServer(t *testing.T) {
	c, _ := startAdmissionEnv(t)
	rec := &warningRecorder{}
	ctx := rec.context(context.Background())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deprecation"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	torch := decodeFile[trainer.ClusterTrainingRuntime](t, "config/samples/trainer_v1alpha1_clustertrainingruntime.yaml")
	deprecated := torch.DeepCopy()
	deprecated.ObjectMeta = metav1.ObjectMeta{Name: "deprecated-torch", Labels: map[string]string{"trainer.kubeflow.org/support": "deprecated"}}
	for _, rt := range []*trainer.ClusterTrainingRuntime{&torch, deprecated} {
		if err := c.Create(ctx, rt); err != nil {
			t.Fatal(err)
		}
	}
	// The control: the ClusterTrainingRuntime webhook's own warning
	// reaches the recorder, so a missing TrainJob warning below is the
	// TrainJob webhook's.
	if got := rec.take(); !slices.ContainsFunc(got, func(w string) bool {
		return w == `ClusterTrainingRuntime "deprecated-torch" is deprecated and will be removed in a future release of Kubeflow Trainer. See runtime deprecation policy: https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy`
	}) {
		t.Fatalf("creating the deprecated runtime: warnings %q, want the ClusterTrainingRuntime webhook's", got)
	}

	for _, tc := range []struct {
		runtime string
		want    []string
	}{
		{runtime: "deprecated-torch", want: []string{trainerDeprecatedRuntimeWarning}},
		{runtime: torch.Name},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			job := sampleTrainJob(t)
			job.ObjectMeta = metav1.ObjectMeta{Name: tc.runtime, Namespace: ns.Name}
			job.Spec.RuntimeRef.Name = tc.runtime
			if err := c.Create(ctx, job); err != nil {
				t.Fatal(err)
			}
			if got := rec.take(); !slices.Equal(got, tc.want) {
				t.Errorf("create: warnings %q, want %q", got, tc.want)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
				t.Fatal(err)
			}
			job.Labels = map[string]string{"team": "a"}
			if err := c.Update(ctx, job); err != nil {
				t.Fatal(err)
			}
			if got := rec.take(); !slices.Equal(got, tc.want) {
				t.Errorf("update: warnings %q, want %q", got, tc.want)
			}
		})
	}
}
