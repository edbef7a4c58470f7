package events

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// fakeRecorder keeps "<type> <reason> <action> <message>" lines.
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (f *fakeRecorder) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, strings.Join([]string{eventtype, reason, action, fmt.Sprintf(note, args...)}, " "))
}

var _ events.EventRecorder = &fakeRecorder{}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var zero Recorder
	zero.Warning(pod("p"), "Failed", "no %s", "panic")
	NewRecorder(nil).Normal(pod("p"), "Created", "x")
	var l Log
	l.Add("Created", "Created %s", "x")
	l.Flush(zero, pod("p"))
	if len(l.reasons) != 0 {
		t.Fatal("Flush empties the log even without a recorder")
	}
}

func TestRecorderStampsTheAction(t *testing.T) {
	f := &fakeRecorder{}
	NewRecorder(f).Warning(pod("p"), "FailedCreate", "quota %d", 3)
	if len(f.events) != 1 || f.events[0] != "Warning FailedCreate Reconcile quota 3" {
		t.Fatalf("events = %q", f.events)
	}
}

func TestLogOneEventPerReasonInOrder(t *testing.T) {
	f := &fakeRecorder{}
	var l Log
	l.Add("CreatedService", "Created head Service %s", "rc-head-svc")
	l.Add("CreatedWorkerPod", "Created %s in group cpu", Count(3, "worker Pod"))
	l.Created(pod("a"))
	l.Add("CreatedService", "Created serve Service rc-serve-svc")
	l.Updated(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}})
	l.Created(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
	if len(l.reasons) == 0 {
		t.Fatal("log with notes reports empty")
	}
	l.Flush(NewRecorder(f), pod("rc"))
	want := []string{
		"Normal CreatedService Reconcile Created head Service rc-head-svc; Created serve Service rc-serve-svc",
		"Normal CreatedWorkerPod Reconcile Created 3 worker Pods in group cpu",
		"Normal Created Reconcile Created Pod a, ConfigMap c",
		"Normal Updated Reconcile Updated ConfigMap d",
	}
	if strings.Join(f.events, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(f.events, "\n"), strings.Join(want, "\n"))
	}
	f.events = nil
	l.Flush(NewRecorder(f), pod("rc"))
	if len(f.events) != 0 || len(l.reasons) != 0 {
		t.Fatalf("a flushed log records again: %q", f.events)
	}
}

func TestLogMessageIsFormatted(t *testing.T) {
	f := &fakeRecorder{}
	var l Log
	l.Add("Created", "%s", "Created 100% of Pods")
	l.Flush(NewRecorder(f), pod("p"))
	if f.events[0] != "Normal Created Reconcile Created 100% of Pods" {
		t.Fatalf("events = %q", f.events)
	}
}

func TestLogConcurrentAdds(t *testing.T) {
	var l Log
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.AddItem("Deleted", "Deleted", fmt.Sprint(i))
		}()
	}
	wg.Wait()
	f := &fakeRecorder{}
	l.Flush(NewRecorder(f), pod("p"))
	if len(f.events) != 1 || strings.Count(f.events[0], ",") != 49 {
		t.Fatalf("events = %q", f.events)
	}
}

func TestCountAndNames(t *testing.T) {
	if got := Count(1, "Pod"); got != "1 Pod" {
		t.Fatal(got)
	}
	if got := Count(0, "Pod"); got != "0 Pods" {
		t.Fatal(got)
	}
	if got := Names([]string{"b", "a"}); got != "a, b" {
		t.Fatal(got)
	}
	var many []string
	for i := range 13 {
		many = append(many, fmt.Sprintf("p%02d", i))
	}
	if got := Names(many); got != "p00, p01, p02, p03, p04, p05, p06, p07, p08, p09 and 3 more" {
		t.Fatal(got)
	}
	if got := Describe(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); got != "Service a" {
		t.Fatal(got)
	}
}
