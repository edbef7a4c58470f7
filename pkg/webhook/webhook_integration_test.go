package webhook

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestAdmissionThroughAPIServer installs config/webhook/manifests.yaml into
// a real kube-apiserver, serves the webhooks from a manager set up with
// Setup, and checks what users see: samples admitted, every corpus file
// denied with its expected message by the expected layer, immutable fields
// kept, runtime patches stamped.
func TestAdmissionThroughAPIServer(t *testing.T) {
	ctx := context.Background()
	c, _ := startAdmissionEnv(t)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "admission"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	t.Run("shipped runtimes are admitted", func(t *testing.T) {
		// config/runtimes reuses the names of the samples' runtimes, so
		// each is removed again before the samples are applied.
		for _, obj := range manifestsIn(t, "config/runtimes") {
			if err := c.Create(ctx, obj); err != nil {
				t.Errorf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
				continue
			}
			if err := c.Delete(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("samples are admitted", func(t *testing.T) {
		for _, obj := range manifestsIn(t, "config/samples") {
			setNamespace(obj, ns.Name)
			if err := c.Create(ctx, obj); err != nil {
				t.Errorf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	})

	t.Run("KubeRay v1.7.0's RayCluster samples are admitted unchanged, but for the features Gantry lacks", func(t *testing.T) {
		// The four that KubeRay v1.7.0 itself refuses unless an alpha gate
		// is on (off by default); Gantry implements none of them and
		// refuses them at admission, naming the field.
		refused := map[string]string{
			"raycluster-deny-all":        "spec.networkPolicy: Forbidden: spec.networkPolicy requires the RayClusterNetworkPolicy feature gate",
			"raycluster-historyserver":   "spec.historyServerOptions: Forbidden: RayClusterHistoryServer feature gate is not enabled",
			"raycluster-mtls":            "spec.tlsOptions: Forbidden: spec.tlsOptions requires the RayClusterMTLS feature gate",
			"raycluster-embedded-gcs-ft": "spec.gcsFaultToleranceOptions.backend: Forbidden: the embedded RocksDB GCS fault tolerance backend",
		}
		admitted := 0
		for i, doc := range raytesting.SampleClusters(t) {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(doc); err != nil {
				t.Fatal(err)
			}
			sampleNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kuberay-%d", i)}}
			if err := c.Create(ctx, sampleNS); err != nil {
				t.Fatal(err)
			}
			obj.SetNamespace(sampleNS.Name)
			err := c.Create(ctx, obj, client.FieldValidation("Strict"))
			want, refuse := refused[obj.GetName()]
			switch {
			case refuse && (err == nil || !strings.Contains(err.Error(), `admission webhook "vraycluster.ray.io" denied the request`) || !strings.Contains(err.Error(), want)):
				t.Errorf("%s: got %v, want the webhook to refuse it with %q", obj.GetName(), err, want)
			case !refuse && err != nil:
				t.Errorf("%s: %v", obj.GetName(), err)
			case !refuse:
				admitted++
			}
		}
		t.Logf("%d of KubeRay v1.7.0's RayCluster samples admitted, %d refused", admitted, len(refused))
	})

	t.Run("Slinky's own chart and Token example are admitted unchanged, nothing pruned", func(t *testing.T) {
		// Upstream's Helm chart (v1.2.1, v1.3.0-rc1) rendered with a
		// LoginSet, Accounting, NodeSet, RestApi and Controller, and its
		// Token example, unchanged. Strict field validation turns a field
		// the schema would prune into an error; admission may refuse a
		// field Gantry does not support, with a message (none is refused
		// today, so any refusal is a regression).
		for _, tc := range []struct{ file, ns string }{
			{"v1.2.1.yaml", "slinky-v121"}, {"v1.3.0-rc1.yaml", "slinky-v130"}, {"token.yaml", "slinky-token"},
		} {
			outcomes := applySlinkyChart(t, c, tc.file, tc.ns)
			if len(outcomes) == 0 {
				t.Errorf("%s: no object", tc.file)
			}
			for _, o := range outcomes {
				if o.refusal != "" {
					t.Errorf("%s %s: refused: %s", tc.file, o.object, o.refusal)
				} else {
					t.Logf("%s %s: admitted", tc.file, o.object)
				}
			}
		}
		// The control: a field the schema does not know fails the create
		// instead of being pruned.
		bogus := documentsIn(t, "testdata/slinky-chart/token.yaml")[0]
		bogus.SetNamespace("slinky-token")
		bogus.SetName("bogus")
		if err := unstructured.SetNestedField(bogus.Object, "x", "spec", "notAField"); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, bogus, client.FieldValidation("Strict")); err == nil || !strings.Contains(err.Error(), "notAField") {
			t.Errorf("an unknown field was not refused under strict field validation: %v", err)
		}
	})

	t.Run("Slinky chart defaults of the v1.2 and v1.3 fields are admitted", func(t *testing.T) {
		// As Slinky's Helm chart renders them, defaults spelled out
		// (scheduledUpdate: {} becomes a 30m duration), plus v1.1's
		// taintKubeNodes: false.
		for _, manifest := range []string{`
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: chart}
spec:
  ha: {backups: 1, enabled: false}
  inplaceReconfigure: false
  jwtKeyRef: {key: jwt.key, name: chart-auth-jwt}
  persistence: {accessModes: [ReadWriteOnce], enabled: true, existingClaim: "", resources: {requests: {storage: 4Gi}}}
  slurmKeyRef: {key: slurm.key, name: chart-auth-slurm}
`, `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: chart}
spec:
  controllerRef: {name: chart}
  ordinalPadding: 0
  oversubscribeNode: false
  partition: {enabled: false}
  pinToNode: false
  pruneSlurmNodeRecords: Never
  replicas: 1
  scalingMode: StatefulSet
  ssh: {enabled: false, sssdConfRef: {name: sssd, key: sssd.conf}}
  taintKubeNodes: false
  updateStrategy: {rollingUpdate: {maxUnavailable: 25%}, scheduledUpdate: {}, type: RollingUpdate}
  workloadDisruptionProtection: true
`} {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
				t.Fatal(err)
			}
			setNamespace(obj, ns.Name)
			if err := c.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
				t.Errorf("%s: %v", obj.GetKind(), err)
			}
		}
		key := client.ObjectKey{Namespace: ns.Name, Name: "chart"}
		expectUpdateDenied(t, c, key, &slinkyv1beta1.NodeSet{}, func(n *slinkyv1beta1.NodeSet) {
			n.Spec.PinToNode = true
		}, `admission webhook "vnodeset.slinky.slurm.net" denied the request`, "spec.pinToNode: Invalid value: true: not supported by Gantry yet")
		expectUpdateDenied(t, c, key, &slinkyv1beta1.Controller{}, func(s *slinkyv1beta1.Controller) {
			s.Spec.HighAvailability.Enabled = true
			s.Spec.Persistence.ExistingClaim = "slurmctld-state"
		}, `admission webhook "vcontroller.slinky.slurm.net" denied the request`, "spec.ha.enabled: Invalid value: true: not supported by Gantry yet")
	})

	t.Run("invalid manifests are denied", func(t *testing.T) {
		byWebhook := 0
		for _, tc := range loadCorpus(t) {
			t.Run(tc.File, func(t *testing.T) {
				setNamespace(tc.Object, ns.Name)
				err := c.Create(ctx, tc.Object)
				if err == nil {
					t.Fatalf("admitted; want %q", tc.Expect)
				}
				msg := err.Error()
				if !strings.Contains(msg, tc.Expect) {
					t.Fatalf("error does not contain %q:\n%s", tc.Expect, msg)
				}
				if fromWebhook := strings.Contains(msg, "admission webhook"); fromWebhook != (tc.RejectedBy == "webhook") {
					t.Errorf("rejected-by %s, but the error is:\n%s", tc.RejectedBy, msg)
				} else if fromWebhook {
					byWebhook++
				}
				if !apierrors.IsInvalid(err) {
					t.Errorf("want reason Invalid (kubectl prints the fields), got %v", apierrors.ReasonForError(err))
				}
			})
		}
		if byWebhook < 30 {
			t.Errorf("%d corpus files denied by the webhooks, want at least 30", byWebhook)
		}
	})

	t.Run("immutable fields stay", func(t *testing.T) {
		key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns.Name, Name: name} }
		expectUpdateDenied(t, c, key("pytorch-mnist"), &trainer.TrainJob{}, func(j *trainer.TrainJob) {
			j.Spec.RuntimeRef.Name = "mpi-distributed"
		}, "spec.runtimeRef: Invalid value", "field is immutable")
		expectUpdateDenied(t, c, key("pytorch-mnist"), &trainer.TrainJob{}, func(j *trainer.TrainJob) {
			j.Spec.RuntimePatches = []trainer.RuntimePatch{{Manager: "kueue.x-k8s.io/manager"}}
		}, "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended")
		expectUpdateDenied(t, c, key("slinky"), &slinkyv1beta1.NodeSet{}, func(n *slinkyv1beta1.NodeSet) {
			n.Spec.ControllerRef.Name = "other"
		}, "spec.controllerRef: Invalid value", "immutable")
		expectUpdateDenied(t, c, key("slurm"), &slinkyv1beta1.Controller{}, func(s *slinkyv1beta1.Controller) {
			s.Spec.ClusterName = "renamed"
		}, `admission webhook "vcontroller.slinky.slurm.net" denied the request`, `spec.clusterName: Invalid value: "renamed": cannot change ClusterName after deployment`)
		expectUpdateDenied(t, c, key("slurm"), &slinkyv1beta1.RestApi{}, func(r *slinkyv1beta1.RestApi) {
			r.Spec.ControllerRef.Name = "other"
		}, "spec.controllerRef: Invalid value", "cannot change controllerRef after deployment")

		// Allowed edits go through.
		rc := &rayv1.RayCluster{}
		if err := c.Get(ctx, key("raycluster-minimal"), rc); err != nil {
			t.Fatal(err)
		}
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
		if err := c.Update(ctx, rc); err != nil {
			t.Errorf("scaling a RayCluster: %v", err)
		}
		job := &trainer.TrainJob{}
		if err := c.Get(ctx, key("pytorch-mnist"), job); err != nil {
			t.Fatal(err)
		}
		job.Spec.Suspend = ptr.To(true)
		job.Spec.RuntimePatches = []trainer.RuntimePatch{{Manager: "kueue.x-k8s.io/manager"}}
		if err := c.Update(ctx, job); err != nil {
			t.Errorf("patching a TrainJob while suspending it: %v", err)
		}
	})

	t.Run("runtime patches are stamped", func(t *testing.T) {
		job := &trainer.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Name: "stamped", Namespace: ns.Name},
			Spec: trainer.TrainJobSpec{
				RuntimeRef:     trainer.RuntimeRef{Name: "torch-distributed"},
				RuntimePatches: []trainer.RuntimePatch{{Manager: "example.com/user"}},
			},
		}
		if err := c.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			t.Fatal(err)
		}
		if job.Spec.RuntimePatches[0].Time == nil {
			t.Error("runtimePatches[0].time was not set by the mutating webhook")
		}
	})
}

// startAdmissionEnv starts kube-apiserver with the CRDs and the webhook
// configurations, and a manager serving every webhook; it returns a client
// and a function that stops the manager (and with it the webhook server)
// while the API server runs on.
func startAdmissionEnv(t *testing.T) (client.Client, func()) {
	t.Helper()
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	jobsetCRDs, err := testenv.JobSetCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, rayv1.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme, slinkyv1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	root := testenv.RepoRoot()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{jobsetCRDs, filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})

	wh := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The Ray gates at their defaults, as the manager parses them.
	if err := Setup(mgr, []string{WorkloadRayCluster, WorkloadTrainJob, WorkloadSlurm}, Options{Features: rayGates(t, nil)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)

	started := mgr.GetWebhookServer().StartedChecker()
	deadline := time.Now().Add(time.Minute)
	for started(&http.Request{}) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the webhook server did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, stop
}

// manifestsIn reads every object under dir (one per file, kustomization
// files skipped), runtimes first so that TrainJobs find theirs.
func manifestsIn(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoFile(dir), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, p := range paths {
		if filepath.Base(p) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	rank := func(u *unstructured.Unstructured) int {
		if strings.HasSuffix(u.GetKind(), "TrainingRuntime") {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return out
}

func setNamespace(u *unstructured.Unstructured, ns string) {
	if u.GetKind() != trainer.ClusterTrainingRuntimeKind {
		u.SetNamespace(ns)
	}
}

// expectUpdateDenied reads key into obj, applies mutate and expects the
// update to fail with every one of wants in the message.
func expectUpdateDenied[T client.Object](t *testing.T, c client.Client, key client.ObjectKey, obj T, mutate func(T), wants ...string) {
	t.Helper()
	if err := c.Get(context.Background(), key, obj); err != nil {
		t.Fatal(err)
	}
	mutate(obj)
	err := c.Update(context.Background(), obj)
	if err == nil {
		t.Errorf("%T %s: update admitted, want %q", obj, key, wants)
		return
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%T %s: error does not contain %q:\n%v", obj, key, w, err)
		}
	}
}
