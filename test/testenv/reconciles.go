package testenv

import (
	"slices"

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
	return total, nil
}
