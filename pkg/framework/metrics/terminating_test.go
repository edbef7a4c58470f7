package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func configMap(name string, deleted *time.Time, finalizers ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers}}
	if deleted != nil {
		cm.DeletionTimestamp = &metav1.Time{Time: *deleted}
	}
	return cm
}

// TestTerminating: only objects being deleted that finalizers hold count;
// the oldest deletion timestamp is exported only while one does; a kind
// the cache cannot list exports nothing rather than a zero; Watch of the
// same controller replaces it.
func TestTerminating(t *testing.T) {
	older := time.Unix(1_700_000_000, 0)
	newer := older.Add(time.Hour)
	busy := fake.NewClientBuilder().WithObjects(
		configMap("live", nil),
		configMap("deleting-old", &older, "gantry.dev/test"),
		configMap("deleting-new", &newer, "gantry.dev/test"),
	).Build()
	idle := fake.NewClientBuilder().WithObjects(configMap("live", nil)).Build()
	broken := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache not synced")
		},
	}).Build()
	newList := func() client.ObjectList { return &corev1.ConfigMapList{} }

	c := NewTerminating()
	c.Watch("busy", busy, newList)
	c.Watch("idle", busy, newList)
	c.Watch("idle", idle, newList) // replaces the first
	c.Watch("broken", broken, newList)
	want := `
# HELP gantry_terminating_objects Objects a controller reconciles that are being deleted: they have a deletion timestamp and finalizers still hold them
# TYPE gantry_terminating_objects gauge
gantry_terminating_objects{controller="busy"} 2
gantry_terminating_objects{controller="idle"} 0
# HELP gantry_terminating_oldest_deletion_timestamp_seconds Deletion timestamp (Unix seconds) of the oldest object being deleted, per controller; absent when none is
# TYPE gantry_terminating_oldest_deletion_timestamp_seconds gauge
gantry_terminating_oldest_deletion_timestamp_seconds{controller="busy"} 1.7e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// The collector's descriptors are consistent with what it collects.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
