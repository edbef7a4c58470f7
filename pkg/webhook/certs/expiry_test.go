package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func writeCert(t *testing.T, dir string, notAfter time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gantry-webhook"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestExpiryCollector: the series is the NotAfter of the certificate in
// the file now (a rotation shows at the next scrape), and absent while the
// file is missing or holds no certificate.
func TestExpiryCollector(t *testing.T) {
	dir := t.TempDir()
	c := ExpiryCollector(dir)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("no certificate file: %d series, want 0", n)
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("a file without a certificate: %d series, want 0", n)
	}
	for _, notAfter := range []time.Time{time.Unix(1_900_000_000, 0), time.Unix(1_950_000_000, 0)} {
		writeCert(t, dir, notAfter)
		want := fmt.Sprintf(`
# HELP %[1]s When the admission webhooks' serving certificate expires, in Unix seconds (the first certificate of tls.crt in the webhook certificate directory)
# TYPE %[1]s gauge
%[1]s %[2]g
`, ExpiryMetricName, float64(notAfter.Unix()))
		if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
			t.Fatalf("NotAfter %s: %v", notAfter, err)
		}
	}
}
