package metrics

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func clusterInfoOpts() prometheus.GaugeOpts {
	return prometheus.GaugeOpts{Name: "gantry_example_cluster_info", Help: "Example per-object gauge."}
}

func TestRegister(t *testing.T) {
	objectLabels := []string{LabelNamespace, LabelName}
	tests := []struct {
		name string
		// register offers a second collector after a GaugeVec built from
		// clusterInfoOpts, through Register with the collector's own type.
		register      func(reg prometheus.Registerer) (got, offered prometheus.Collector, err error)
		wantExisting  bool
		wantErrSubstr string
	}{
		{
			name: "equal collector returns the registered one",
			register: func(reg prometheus.Registerer) (prometheus.Collector, prometheus.Collector, error) {
				offered := prometheus.NewGaugeVec(clusterInfoOpts(), objectLabels)
				got, err := Register(reg, offered)
				return got, offered, err
			},
			wantExisting: true,
		},
		{
			name: "same descriptors but another collector type is an error",
			register: func(reg prometheus.Registerer) (prometheus.Collector, prometheus.Collector, error) {
				o := clusterInfoOpts()
				offered := prometheus.NewCounterVec(prometheus.CounterOpts{Name: o.Name, Help: o.Help}, objectLabels)
				got, err := Register(reg, offered)
				return got, offered, err
			},
			wantErrSubstr: "metric already registered as *prometheus.GaugeVec",
		},
		{
			name: "same name with other help is an error",
			register: func(reg prometheus.Registerer) (prometheus.Collector, prometheus.Collector, error) {
				o := clusterInfoOpts()
				o.Help = "different"
				offered := prometheus.NewGaugeVec(o, objectLabels)
				got, err := Register(reg, offered)
				return got, offered, err
			},
			wantErrSubstr: "different help",
		},
		{
			name: "unrelated collector registers",
			register: func(reg prometheus.Registerer) (prometheus.Collector, prometheus.Collector, error) {
				offered := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_other", Help: "x"})
				got, err := Register(reg, offered)
				return got, offered, err
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			first := prometheus.NewGaugeVec(clusterInfoOpts(), objectLabels)
			if got, err := Register(reg, first); err != nil || got != first {
				t.Fatalf("first Register = (%p, %v), want (%p, nil)", got, err, first)
			}

			got, offered, err := tc.register(reg)
			if tc.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Register: %v", err)
			}
			want := offered
			if tc.wantExisting {
				want = first
			}
			if got != want {
				t.Errorf("Register returned %p, want %p", got, want)
			}
		})
	}
}

func TestRegisterSharesSeriesAcrossSetups(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := MustRegister(reg, NewObjectGaugeVec(clusterInfoOpts()))
	b := MustRegister(reg, NewObjectGaugeVec(clusterInfoOpts()))
	b.Set("default", "rc", 1)
	if got := seriesOf(t, a, LabelNamespace, LabelName)["default/rc"]; got != 1 {
		t.Errorf("value seen through the first registration = %v, want 1", got)
	}
}

func TestRegisterDefaultsToControllerRuntimeRegistry(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_framework_metrics_test_gauge", Help: "test"})
	if _, err := Register(nil, g); err != nil {
		t.Fatalf("Register: %v", err)
	}
	t.Cleanup(func() { ctrlmetrics.Registry.Unregister(g) })
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	found := false
	for _, f := range families {
		found = found || f.GetName() == "gantry_framework_metrics_test_gauge"
	}
	if !found {
		t.Error("gauge not served by controller-runtime's registry")
	}
}

func TestMustRegisterPanicsOnClash(t *testing.T) {
	reg := prometheus.NewRegistry()
	MustRegister(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_clash", Help: "a"}))
	defer func() {
		if recover() == nil {
			t.Error("MustRegister should panic on a clash")
		}
	}()
	MustRegister(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_clash", Help: "b"}))
}

func TestObjectGaugeVecForget(t *testing.T) {
	type series struct {
		namespace, name, condition string
		value                      float64
	}
	tests := []struct {
		name          string
		series        []series
		forgetNS      string
		forgetName    string
		wantDeleted   int
		wantRemaining int
	}{
		{
			name: "all series of the object go, others stay",
			series: []series{
				{"default", "rc", "Ready", 1},
				{"default", "rc", "Provisioned", 0},
				{"default", "other", "Ready", 1},
				{"team", "rc", "Ready", 1},
			},
			forgetNS: "default", forgetName: "rc",
			wantDeleted: 2, wantRemaining: 2,
		},
		{
			name:     "unknown object deletes nothing",
			series:   []series{{"default", "rc", "Ready", 1}},
			forgetNS: "default", forgetName: "gone",
			wantDeleted: 0, wantRemaining: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewObjectGaugeVec(prometheus.GaugeOpts{Name: "gantry_example_condition", Help: "x"}, "condition")
			for _, s := range tc.series {
				g.Set(s.namespace, s.name, s.value, s.condition)
			}
			if got := g.Forget(tc.forgetNS, tc.forgetName); got != tc.wantDeleted {
				t.Errorf("Forget deleted %d series, want %d", got, tc.wantDeleted)
			}
			remaining := seriesOf(t, g, LabelNamespace, LabelName, "condition")
			if len(remaining) != tc.wantRemaining {
				t.Errorf("%d series remain (%v), want %d", len(remaining), remaining, tc.wantRemaining)
			}
			for _, s := range tc.series {
				if s.namespace == tc.forgetNS && s.name == tc.forgetName {
					continue
				}
				key := s.namespace + "/" + s.name + "/" + s.condition
				if got, ok := remaining[key]; !ok || got != s.value {
					t.Errorf("%s = (%v, present %v), want %v", key, got, ok, s.value)
				}
			}
		})
	}
}

func TestForgetAcrossVecKinds(t *testing.T) {
	labels := []string{LabelNamespace, LabelName}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "g"}, labels)
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c", Help: "c"}, labels)
	histogram := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h", Help: "h"}, labels)
	for _, name := range []string{"rc", "keep"} {
		gauge.WithLabelValues("default", name).Set(1)
		counter.WithLabelValues("default", name).Inc()
		histogram.WithLabelValues("default", name).Observe(1)
	}

	if got := Forget("default", "rc", gauge, counter, histogram); got != 3 {
		t.Errorf("Forget deleted %d series, want 3", got)
	}
	for _, c := range []prometheus.Collector{gauge, counter, histogram} {
		if got := len(seriesOf(t, c, LabelNamespace, LabelName)); got != 1 {
			t.Errorf("%T keeps %d series, want 1", c, got)
		}
	}
}

// seriesOf collects c and returns each series' value keyed by the values of
// labelNames, in that order, joined with "/". It stands in for client_golang's testutil, whose
// test-only dependencies are not in go.mod.
func seriesOf(t *testing.T, c prometheus.Collector, labelNames ...string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatalf("writing metric: %v", err)
		}
		byName := map[string]string{}
		for _, l := range pb.GetLabel() {
			byName[l.GetName()] = l.GetValue()
		}
		values := make([]string, 0, len(labelNames))
		for _, name := range labelNames {
			values = append(values, byName[name])
		}
		var v float64
		switch {
		case pb.Gauge != nil:
			v = pb.GetGauge().GetValue()
		case pb.Counter != nil:
			v = pb.GetCounter().GetValue()
		case pb.Histogram != nil:
			v = float64(pb.GetHistogram().GetSampleCount())
		}
		out[strings.Join(values, "/")] = v
	}
	return out
}

func TestStateGaugeReplacesTheObjectsSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := MustRegister(reg, NewStateGauge(prometheus.GaugeOpts{Name: "gantry_example_state", Help: "h"}, LabelName, LabelNamespace, "state"))
	series := func() []string {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range families {
			for _, m := range f.GetMetric() {
				var parts []string
				for _, l := range m.GetLabel() {
					parts = append(parts, l.GetName()+"="+l.GetValue())
				}
				out = append(out, strings.Join(parts, ",")+" "+strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64))
			}
		}
		return out
	}
	g.Set(prometheus.Labels{LabelNamespace: "ns", LabelName: "a", "state": "Pending"})
	g.Set(prometheus.Labels{LabelNamespace: "ns", LabelName: "b", "state": "Pending"})
	g.Set(prometheus.Labels{LabelNamespace: "ns", LabelName: "a", "state": "Running"})
	g.Set(prometheus.Labels{LabelNamespace: "ns", LabelName: "a", "state": "Running"})
	want := []string{"name=a,namespace=ns,state=Running 1", "name=b,namespace=ns,state=Pending 1"}
	if got := series(); !slices.Equal(got, want) {
		t.Fatalf("series %q, want %q", got, want)
	}
	g.Forget("ns", "a")
	if got := series(); !slices.Equal(got, want[1:]) {
		t.Fatalf("after Forget: %q", got)
	}
	// A forgotten object set again starts afresh.
	g.Set(prometheus.Labels{LabelNamespace: "ns", LabelName: "a", "state": "Failed"})
	if got := series(); len(got) != 2 || got[0] != "name=a,namespace=ns,state=Failed 1" {
		t.Fatalf("after re-Set: %q", got)
	}
	// Registering an equal gauge again shares the first.
	if again := MustRegister(reg, NewStateGauge(prometheus.GaugeOpts{Name: "gantry_example_state", Help: "h"}, LabelName, LabelNamespace, "state")); again != g {
		t.Fatal("a second registration did not return the first gauge")
	}
}

func TestStateGaugeNeedsObjectLabels(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a gauge without name and namespace labels was accepted")
		}
	}()
	NewStateGauge(prometheus.GaugeOpts{Name: "x", Help: "h"}, "state")
}

func TestRegistrarKeepsTheFirstError(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_registrar_a", Help: "a"})
	r := NewRegistrar(reg)
	if got := Add(r, first); got != first || r.Err() != nil {
		t.Fatalf("first Add: %v, %v", got, r.Err())
	}
	// Same name, other help: a clash.
	Add(r, prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_registrar_a", Help: "other"}))
	if r.Err() == nil {
		t.Fatal("a clash was not kept")
	}
	later := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_registrar_b", Help: "b"})
	Add(r, later)
	if reg.Unregister(later) {
		t.Fatal("a collector was registered after an error")
	}
	// An equal collector registered again comes back as the first.
	r2 := NewRegistrar(reg)
	if got := Add(r2, prometheus.NewGauge(prometheus.GaugeOpts{Name: "gantry_registrar_a", Help: "a"})); got != first || r2.Err() != nil {
		t.Fatalf("re-registration: %v, %v", got, r2.Err())
	}
}
