package slurmctld

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;watch;create;update;patch;delete

// ServiceMonitorGVK is the Prometheus Operator kind spec.metrics.serviceMonitor
// asks for. It is built as unstructured: the CRD is optional and Gantry does
// not depend on the Prometheus Operator's module.
var ServiceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// ReasonServiceMonitorUnavailable is the Warning event of a Controller that
// asks for a ServiceMonitor on a cluster without the Prometheus Operator's CRD.
const ReasonServiceMonitorUnavailable = "ServiceMonitorUnavailable"

// defaultMetricPaths are slurmctld's OpenMetrics endpoints (MetricsType=
// metrics/openmetrics), scraped when the user names none, as Slinky does.
var defaultMetricPaths = []string{"/metrics/jobs", "/metrics/nodes", "/metrics/partitions", "/metrics/scheduler"}

// wantsServiceMonitor reports whether the Controller asks for one; both
// metrics and its serviceMonitor must be enabled.
func wantsServiceMonitor(c *slinkyv1beta1.Controller) bool {
	return c.Spec.Metrics.Enabled && c.Spec.Metrics.ServiceMonitor.Enabled && !c.Spec.External
}

// BuildServiceMonitor builds the ServiceMonitor scraping slurmctld's
// Service: named as Slinky names it, as the StatefulSet (<name>-controller),
// selecting its Service by the
// Controller's selector labels, one endpoint per metric path on the
// slurmctld port. An endpoint's own interval and timeout win over the
// ServiceMonitor's.
func BuildServiceMonitor(c *slinkyv1beta1.Controller) *unstructured.Unstructured {
	sm := c.Spec.Metrics.ServiceMonitor
	endpoint := func(path string, interval, timeout slinkyv1beta1.Duration) map[string]any {
		e := map[string]any{"path": path, "port": slinky.AppSlurmctld, "scheme": "http"}
		if interval == "" {
			interval = sm.Interval
		}
		if timeout == "" {
			timeout = sm.ScrapeTimeout
		}
		if interval != "" {
			e["interval"] = string(interval)
		}
		if timeout != "" {
			e["scrapeTimeout"] = string(timeout)
		}
		return e
	}
	var endpoints []any
	for _, e := range sm.Endpoints {
		endpoints = append(endpoints, endpoint(e.Path, e.Interval, e.ScrapeTimeout))
	}
	if len(endpoints) == 0 {
		for _, p := range defaultMetricPaths {
			endpoints = append(endpoints, endpoint(p, "", ""))
		}
	}
	selector := map[string]any{}
	for k, v := range slinky.ControllerSelectorLabels(c) {
		selector[k] = v
	}

	om := builder.NewMetadata(slinky.ControllerStatefulSetName(c.Name), c.Namespace).
		WithLabels(c.Labels).
		WithLabels(sm.Labels).
		WithLabels(slinky.ControllerLabels(c)).
		WithAnnotations(c.Annotations).
		WithAnnotations(sm.Annotations).
		WithOwner(c, slinkyv1beta1.ControllerGVK).
		Build()
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": selector},
			"namespaceSelector": map[string]any{"matchNames": []any{c.Namespace}},
			"endpoints":         endpoints,
		},
	}}
	u.SetGroupVersionKind(ServiceMonitorGVK)
	u.SetName(om.Name)
	u.SetNamespace(om.Namespace)
	u.SetLabels(om.Labels)
	u.SetAnnotations(om.Annotations)
	u.SetOwnerReferences(om.OwnerReferences)
	return u
}

// ConditionServiceMonitor reports, on a Controller that asks for a
// ServiceMonitor, whether it exists; a Controller that asks for none has no
// such condition.
const ConditionServiceMonitor = "ServiceMonitorReady"

// ReasonServiceMonitorSynced: the ServiceMonitor matches the spec.
const ReasonServiceMonitorSynced = "Synced"

// syncServiceMonitor creates or updates the ServiceMonitor the Controller
// asks for and deletes one it no longer asks for. On a cluster without the
// ServiceMonitor CRD nothing is written: the ServiceMonitorReady condition
// says why, a Warning event says it once when that starts, and the rest of
// the reconcile goes on.
func (r *Reconciler) syncServiceMonitor(ctx context.Context, s *scope) error {
	err := r.serviceMonitor(ctx, s)
	// Only a run to its end says what the condition should be.
	s.monitorSynced = err == nil
	return err
}

func (r *Reconciler) serviceMonitor(ctx context.Context, s *scope) error {
	c := s.Object
	if !wantsServiceMonitor(c) && r.monitorsMissing.recently(time.Now()) {
		// Nothing of ours to delete where the CRD is not installed; a
		// Controller that asks for none does not look again on every
		// reconcile (each look is a discovery request).
		return nil
	}
	served, err := r.servesServiceMonitors()
	if err != nil {
		return err
	}
	r.monitorsMissing.seen(!served, time.Now())
	if !served {
		if wantsServiceMonitor(c) {
			msg := fmt.Sprintf("spec.metrics.serviceMonitor is enabled but the ServiceMonitor CRD (%s) is not installed; install the Prometheus Operator's CRDs to have slurmctld scraped",
				ServiceMonitorGVK.GroupKind())
			s.monitor = &metav1.Condition{Type: ConditionServiceMonitor, Status: metav1.ConditionFalse, Reason: ReasonServiceMonitorUnavailable, Message: msg}
			prev := meta.FindStatusCondition(c.Status.Conditions, ConditionServiceMonitor)
			if (prev == nil || prev.Reason != ReasonServiceMonitorUnavailable) && r.Reported.Changed(c.UID, *s.monitor) {
				r.Recorder.Warning(c, ReasonServiceMonitorUnavailable, "%s", msg)
			}
		}
		return nil
	}
	desired := BuildServiceMonitor(c)
	// Gantry 0.1 named it as the Controller: with Slinky's name now,
	// that one would scrape slurmctld a second time. (A read past the
	// cache, on a cluster that serves ServiceMonitors only; Controllers
	// are few and seldom reconciled.)
	if err := r.deleteOwnServiceMonitor(ctx, c, c.Name); err != nil {
		return err
	}
	if wantsServiceMonitor(c) {
		if err := r.Sync(ctx, &s.Events, desired); err != nil {
			return err
		}
		s.monitor = &metav1.Condition{Type: ConditionServiceMonitor, Status: metav1.ConditionTrue, Reason: ReasonServiceMonitorSynced,
			Message: "ServiceMonitor " + desired.GetName() + " scrapes slurmctld"}
		return nil
	}
	return r.deleteOwnServiceMonitor(ctx, c, desired.GetName())
}

// deleteOwnServiceMonitor deletes the Controller's ServiceMonitor of that
// name, if it is there; someone else's of the same name is theirs.
func (r *Reconciler) deleteOwnServiceMonitor(ctx context.Context, c *slinkyv1beta1.Controller, name string) error {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(ServiceMonitorGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(existing, c) {
		return nil
	}
	if err := r.Client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting ServiceMonitor %s: %w", client.ObjectKeyFromObject(existing), err)
	}
	return nil
}

// monitorsMissingFor is how long a missing ServiceMonitor CRD is taken as
// still missing by Controllers that ask for no ServiceMonitor.
const monitorsMissingFor = time.Minute

// missingCRD remembers when a CRD was last found missing.
type missingCRD struct{ at atomic.Int64 }

func (m *missingCRD) seen(missing bool, now time.Time) {
	if missing {
		m.at.Store(now.UnixNano())
	} else {
		m.at.Store(0)
	}
}

func (m *missingCRD) recently(now time.Time) bool {
	at := m.at.Load()
	return at != 0 && now.Sub(time.Unix(0, at)) < monitorsMissingFor
}

// servesServiceMonitors asks the API server (through the manager's lazy
// REST mapper, which looks again on a miss) whether the CRD is installed,
// so installing the Prometheus Operator later needs no restart.
func (r *Reconciler) servesServiceMonitors() (bool, error) {
	_, err := r.Client.RESTMapper().RESTMapping(ServiceMonitorGVK.GroupKind(), ServiceMonitorGVK.Version)
	var noMatch *meta.NoKindMatchError
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err), errors.As(err, &noMatch):
		return false, nil
	default:
		return false, fmt.Errorf("looking up the ServiceMonitor kind: %w", err)
	}
}
