package certs

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
)

// ExpiryMetricName is the series ExpiryCollector exports.
const ExpiryMetricName = "gantry_webhook_certificate_expiry_timestamp_seconds"

// ExpiryCollector exports when the webhook serving certificate in certDir
// expires (its NotAfter, Unix seconds), read from the file at each scrape:
// the certificate the webhook server serves, whoever wrote it (Gantry's
// rotation or cert-manager). A missing or unreadable file exports nothing,
// so an alert on the series' absence or value can tell.
func ExpiryCollector(certDir string) prometheus.Collector {
	return &expiryCollector{
		path: filepath.Join(certDir, CertFile),
		desc: prometheus.NewDesc(ExpiryMetricName,
			"When the admission webhooks' serving certificate expires, in Unix seconds (the first certificate of tls.crt in the webhook certificate directory)",
			nil, nil),
	}
}

type expiryCollector struct {
	path string
	desc *prometheus.Desc
}

func (c *expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *expiryCollector) Collect(ch chan<- prometheus.Metric) {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(cert.NotAfter.Unix()))
}
