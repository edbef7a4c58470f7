package testenv

import (
	"fmt"
	"net/http"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Reconciles is how many reconciles the named controllers have finished in
// this process: controller-runtime's controller_runtime_reconcile_total,
// which is global, so it adds up across the process's managers.
func Reconciles(controllers ...string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	return sumReconciles(families, controllers), nil
}

// ProcessReconciles is Reconciles for a manager running as its own
// process, read from its metrics endpoint (host:port, plain HTTP).
func ProcessReconciles(metricsAddr string, controllers ...string) (float64, error) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/metrics: %s", metricsAddr, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	families := make([]*dto.MetricFamily, 0, len(parsed))
	for _, f := range parsed {
		families = append(families, f)
	}
	return sumReconciles(families, controllers), nil
}

func sumReconciles(families []*dto.MetricFamily, controllers []string) float64 {
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && slices.Contains(controllers, l.GetValue()) {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
