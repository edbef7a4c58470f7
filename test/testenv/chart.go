package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// ChartNamespace is the namespace the chart's RBAC is installed into, as a
// release would be.
const ChartNamespace = "gantry-system"

// ChartIdentity installs the chart's ServiceAccount and RBAC (bin/helm
// template with the default values, or those helmArgs set, e.g. "--set",
// "controllers={slurm}") and returns the identity to
// impersonate, so the manager has exactly the rights the chart gives it:
// what it lacks fails here as it would in a cluster.
func ChartIdentity(t testing.TB, env *Env, helmArgs ...string) rest.ImpersonationConfig {
	t.Helper()
	helm := filepath.Join(RepoRoot(), "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("the chart's RBAC is rendered with bin/helm (make bin/helm builds it): %v", err)
	}
	args := append([]string{"template", "gantry", filepath.Join(RepoRoot(), "charts", "gantry"),
		"--namespace", ChartNamespace, "--kube-version", "1.34.0"}, helmArgs...)
	out, err := exec.Command(helm, args...).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ChartNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	serviceAccount := ""
	for doc := range strings.SplitSeq(string(out), "\n---") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil || obj.Object == nil {
			continue
		}
		switch obj.GetKind() {
		case "ServiceAccount":
			serviceAccount = obj.GetName()
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating the chart's %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	if serviceAccount == "" {
		t.Fatal("the chart renders no ServiceAccount")
	}
	return rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ChartNamespace + ":" + serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ChartNamespace, "system:authenticated"},
	}
}

// ChartKubeconfig is env's kubeconfig acting as the chart's ServiceAccount
// (see ChartIdentity).
func ChartKubeconfig(t testing.TB, env *Env) []byte {
	t.Helper()
	as := ChartIdentity(t, env)
	cfg, err := clientcmd.Load(env.KubeConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range cfg.AuthInfos {
		user.Impersonate, user.ImpersonateGroups = as.UserName, as.Groups
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
