package certs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestOptionsValidate(t *testing.T) {
	self := Options{Mode: ModeSelf, CertDir: "/c", SecretName: "s", SecretNamespace: "ns", ServiceName: "svc"}
	cases := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "self", mutate: func(*Options) {}},
		{name: "self without namespace", mutate: func(o *Options) { o.SecretNamespace = "" }, wantErr: "needs --webhook-secret-name and a namespace"},
		{name: "self without any name for the certificate", mutate: func(o *Options) { o.ServiceName = "" }, wantErr: "--webhook-dns-names"},
		{name: "self with only extra names", mutate: func(o *Options) { o.ServiceName = ""; o.ExtraDNSNames = []string{"localhost"} }},
		{name: "external", mutate: func(o *Options) { *o = Options{Mode: ModeExternal, CertDir: "/c"} }},
		{name: "external does not write", mutate: func(o *Options) { *o = Options{Mode: ModeExternal, CertDir: "/c", WriteFiles: true} }, wantErr: "only applies"},
		{name: "unknown mode", mutate: func(o *Options) { o.Mode = "vault" }, wantErr: `must be "self" or "external"`},
		{name: "no directory", mutate: func(o *Options) { o.CertDir = "" }, wantErr: "--webhook-cert-dir"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := self
			tc.mutate(&o)
			err := o.Validate()
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDNSNames(t *testing.T) {
	o := Options{ServiceName: "gantry-webhook", SecretNamespace: "ops", ExtraDNSNames: []string{"localhost"}}
	got := strings.Join(o.DNSNames(), ",")
	if want := "gantry-webhook.ops.svc,gantry-webhook.ops.svc.cluster.local,gantry-webhook.ops,localhost"; got != want {
		t.Fatalf("DNSNames() = %s, want %s", got, want)
	}
}

// TestSecretFileWriter: the writer copies the certificate once the Secret
// holds one, rewrites nothing while it is unchanged, and picks up a
// rotation.
func TestSecretFileWriter(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	dir := t.TempDir()
	w := &secretFileWriter{reader: c, key: key, dir: dir}
	ctx := context.Background()

	if wrote, err := w.sync(ctx); err != nil || wrote || filesPresent(dir) {
		t.Fatalf("empty Secret: wrote=%v err=%v files=%v, want nothing written", wrote, err, filesPresent(dir))
	}
	secret.Data = map[string][]byte{CertFile: []byte("cert-1"), KeyFile: []byte("key-1")}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if wrote, err := w.sync(ctx); err != nil || !wrote || !filesPresent(dir) {
		t.Fatalf("filled Secret: wrote=%v err=%v", wrote, err)
	}
	if wrote, _ := w.sync(ctx); wrote {
		t.Fatal("an unchanged Secret was written again")
	}
	secret.Data[CertFile] = []byte("cert-2")
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if wrote, err := w.sync(ctx); err != nil || !wrote {
		t.Fatalf("rotated Secret: wrote=%v err=%v", wrote, err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, CertFile))
	if string(got) != "cert-2" {
		t.Fatalf("tls.crt = %q after rotation", got)
	}
	if st, _ := os.Stat(filepath.Join(dir, KeyFile)); st.Mode().Perm() != 0o600 {
		t.Fatalf("tls.key mode = %v, want 0600", st.Mode().Perm())
	}
}
