package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/controller/ray"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/syncbuf"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// forbidden returns the log lines that report an RBAC denial.
func forbidden(logs *syncbuf.Buffer) []string {
	var out []string
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, "forbidden") {
			out = append(out, line)
		}
	}
	return out
}

// TestEachControllerRunsUnderItsOwnChartRBAC runs the manager with one
// workload family enabled, as the ServiceAccount of the chart rendered with
// only that family (controllers={family}), against a real API server: the
// family's first object gets its first child, and neither the manager nor
// client-go's informers log a single RBAC denial. The chart's rules come
// from each family's markers (hack/sync-chart.sh); a rule a controller
// needs but whose marker sits in another family's package fails here.
func TestEachControllerRunsUnderItsOwnChartRBAC(t *testing.T) {
	logs := &syncbuf.Buffer{}
	logger := zap.New(zap.WriteTo(logs), zap.UseDevMode(false))
	ctrl.SetLogger(logger)
	// Left set when the test ends: the managers' goroutines may still log
	// while they stop, and this package has no other test that logs.
	klog.SetLogger(logger)

	for _, tc := range []struct {
		family string
		// start creates the family's first object in ns and returns the
		// check that its first child exists.
		start func(t *testing.T, c client.Client, ns string) func() error
	}{
		{family: "raycluster", start: func(t *testing.T, c client.Client, ns string) func() error {
			create(t, c, raytesting.MakeRayCluster("rc", ns).WorkerGroup("cpu", 1).Obj())
			return func() error {
				pods := &corev1.PodList{}
				if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{rayv1.RayClusterLabelKey: "rc"}); err != nil {
					return err
				}
				if len(pods.Items) == 0 {
					return errNotYet("the RayCluster's Pods")
				}
				return nil
			}
		}},
		{family: "trainjob", start: func(t *testing.T, c client.Client, ns string) func() error {
			spec := trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("torch:runtime")).Obj()
			create(t, c, trainertesting.MakeClusterTrainingRuntime("rbac-torch").Spec(spec).Obj())
			job := trainertesting.MakeTrainJob("tj", ns).RuntimeRef(trainer.ClusterTrainingRuntimeKind, "rbac-torch").Obj()
			job.UID = ""
			create(t, c, job)
			return func() error {
				return c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tj"}, &jobsetv1alpha2.JobSet{})
			}
		}},
		{family: "slurm", start: func(t *testing.T, c client.Client, ns string) func() error {
			obj := slinkytesting.MakeController("slurm", ns).Keys("keys").Image("slurmctld:25.11").Obj()
			obj.Annotations = map[string]string{slinkyv1beta1.AnnotationGenerateAuthKeys: "true"}
			create(t, c, obj)
			return func() error {
				return c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "slurm-controller"}, &appsv1.StatefulSet{})
			}
		}},
	} {
		t.Run(tc.family, func(t *testing.T) {
			env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{
				rayv1.AddToScheme, trainer.AddToScheme, slinkyv1beta1.AddToScheme, jobsetv1alpha2.AddToScheme,
			}})
			cfg := env.Config
			cfg.Impersonate = testenv.ChartIdentity(t, env, "--set", "controllers={"+tc.family+"}")

			reg := &workload.Registry{}
			reg.MustRegister(ray.Integration())
			reg.MustRegister(trainjob.Integration())
			reg.MustRegister(slurm.Integration())
			probe := testenv.FreeAddr(t)
			opts, err := app.ParseFlags([]string{
				"--controllers=" + tc.family, "--metrics-bind-address=0", "--webhook-port=0",
				"--health-probe-bind-address=" + probe,
			}, reg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- app.Run(ctx, cfg, opts, reg) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("manager: %v", err)
				}
			})

			g := gomega.NewWithT(t)
			g.Eventually(func() int {
				resp, err := http.Get("http://" + probe + "/readyz")
				if err != nil {
					return 0
				}
				_ = resp.Body.Close()
				return resp.StatusCode
			}).WithTimeout(time.Minute).Should(gomega.Equal(http.StatusOK))

			ns := "rbac-" + tc.family
			create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			child := tc.start(t, env.Client, ns)
			g.Eventually(child).WithTimeout(time.Minute).Should(gomega.Succeed(), "the %s controller made nothing as the chart's ServiceAccount", tc.family)
			// A denial on a later step (status, events) shows within a
			// few reconciles.
			g.Consistently(func() []string { return forbidden(logs) }).WithTimeout(3*time.Second).Should(gomega.BeEmpty(), "RBAC denials with controllers={%s}", tc.family)
		})
	}
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) + " do not exist yet" }

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
