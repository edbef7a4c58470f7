package trainjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// apiTotalAnnotationSizeLimit is the API server's limit on the annotations
// of one object, keys and values together
// (k8s.io/apimachinery/pkg/api/validation.TotalAnnotationSizeLimitB).
const apiTotalAnnotationSizeLimit = 256 << 10

// bigRuntimeSpec is a torch runtime whose trainer runs an inline script of
// about size bytes: a runtime whose spec alone is past what the
// annotations of one object may hold.
func bigRuntimeSpec(image string, size int) *trainer.TrainingRuntimeSpec {
	line := "print('a line of an inline training script')\n"
	script := strings.Repeat(line, size/len(line)+1)
	node := trainertesting.MakeContainer(trainer.TrainerNodeName, image).Command("python", "-c", script).Obj()
	return trainertesting.MakeRuntimeSpec().Torch(nil).
		ReplicatedJob(trainertesting.ReplicatedJob(trainer.TrainerNodeName, trainer.AncestorTrainer, node)).Obj()
}

// eventNotes lists reason and note of the events recorded for an object,
// for failure messages.
func (h *harness) eventNotes(ns, name string) []string {
	list := &eventsv1.EventList{}
	if err := h.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return []string{err.Error()}
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			note := e.Note
			if len(note) > 300 {
				note = note[:300] + "..."
			}
			notes = append(notes, e.Reason+": "+note)
		}
	}
	return notes
}

// TestRuntimeTooBigForAnAnnotationIsSnapshotInAConfigMap: a runtime whose
// spec serializes past the 256 KiB the annotations of an object may hold
// still gets its JobSet: the snapshot goes to the job's
// <job>-runtime-snapshot ConfigMap, in Trainer v2.3's own format, instead
// of the JobSet's annotation (which the API server would refuse, and the
// job would never start). The job is then built from that ConfigMap, not
// from the runtime as it is now, and reading it costs no read past the
// cache.
func TestRuntimeTooBigForAnAnnotationIsSnapshotInAConfigMap(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "big", bigRuntimeSpec("torch:runtime", 300<<10))
	h.create(t, newTrainJob(ns, "big", rtName).Suspend(true).Obj())

	js := &jobsetv1alpha2.JobSet{}
	g.Eventually(func() error {
		return h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "big"}, js)
	}).WithTimeout(20*time.Second).Should(gomega.Succeed(),
		func() string {
			return "the job has no JobSet; its events: " + strings.Join(h.eventNotes(ns, "big"), "\n")
		})
	tj := h.eventuallyCreated(t, ns, "big")
	g.Expect(annotationsSize(js.Annotations)).To(gomega.BeNumerically("<=", apiTotalAnnotationSizeLimit))
	g.Expect(js.Annotations).NotTo(gomega.HaveKey(RuntimeSnapshotAnnotation), "the snapshot is not on the JobSet")

	cm := &corev1.ConfigMap{}
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "big" + TrainerSnapshotSuffix}, cm)).To(gomega.Succeed())
	expectControlledBy(g, cm, tj)
	g.Expect(cm.Labels).To(gomega.HaveKeyWithValue(builder.LabelManagedBy, builder.ManagedByGantry), "the manager's cache holds it")
	spec, err := readTrainerSnapshot(context.Background(), h.c, tj)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "Trainer's format, which Trainer v2.3 reads too")
	g.Expect(trainerImage(spec)).To(gomega.Equal("torch:runtime"))
	reads := h.pastCache.count(ns, &corev1.ConfigMap{})

	image := func() string {
		return container(h.eventuallyJobSet(t, ns, "big"), trainer.TrainerNodeName, trainer.TrainerNodeName).Image
	}
	h.editRuntimeImage(t, rtName, "torch:edited")
	h.forceReconcile(t, tj)
	g.Expect(image()).To(gomega.Equal("torch:runtime"), "the suspended JobSet is rebuilt from the snapshot")
	h.setSuspended(t, ns, "big", false)
	g.Expect(image()).To(gomega.Equal("torch:runtime"), "the job resumes with the runtime it was created with")
	g.Expect(h.pastCache.count(ns, &corev1.ConfigMap{})).To(gomega.Equal(reads), "the snapshot is read from the cache")
	var cmWrites []string
	for _, w := range h.writes.Log() {
		if strings.HasPrefix(w, ns+": ") && strings.HasSuffix(w, " big"+TrainerSnapshotSuffix) {
			cmWrites = append(cmWrites, w)
		}
	}
	g.Expect(cmWrites).To(gomega.HaveLen(1), "the snapshot ConfigMap is written once")
}

// TestSnapshotConfigMapIsKeptThroughFailedJobSetWrites: the snapshot of
// a runtime too big for the JobSet is taken when its ConfigMap is first
// written, before the JobSet, as Trainer takes its snapshot: while the
// job's first JobSet write keeps failing, an edit of the runtime does not
// reach the snapshot, and the JobSet that lands is built from it.
func TestSnapshotConfigMapIsKeptThroughFailedJobSetWrites(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "big", bigRuntimeSpec("torch:first", 300<<10))
	left := h.faults.failJobSetApplies(ns, 1<<30)
	h.create(t, newTrainJob(ns, "big", rtName).Suspend(true).Obj())
	tj := h.trainJob(g, ns, "big")
	snapshotImage := func() string {
		spec, err := readTrainerSnapshot(context.Background(), h.c, tj)
		if err != nil {
			return err.Error()
		}
		return trainerImage(spec)
	}
	g.Eventually(snapshotImage).WithTimeout(20 * time.Second).Should(gomega.Equal("torch:first"))

	h.editRuntimeImage(t, rtName, "torch:second")
	// A failed apply seen after the edit comes from a reconcile that may
	// have begun before it; the one after that saw the edit.
	for range 2 {
		failed := left.Load()
		h.forceReconcile(t, tj)
		g.Eventually(left.Load).WithTimeout(10*time.Second).Should(gomega.BeNumerically("<", failed), "a JobSet apply fails")
	}
	g.Expect(snapshotImage()).To(gomega.Equal("torch:first"), "the snapshot is the runtime as it was first written")

	h.faults.failJobSetApplies(ns, 0)
	h.forceReconcile(t, tj)
	js := h.eventuallyJobSet(t, ns, "big")
	g.Expect(container(js, trainer.TrainerNodeName, trainer.TrainerNodeName).Image).To(gomega.Equal("torch:first"))
	g.Expect(js.Annotations).NotTo(gomega.HaveKey(RuntimeSnapshotAnnotation))
}

// TestSnapshotConfigMapOfAnotherObjectIsLeftAlone: a ConfigMap named
// <job>-runtime-snapshot that the job does not control is not taken over
// for a snapshot too big for the JobSet (the job's garbage collection would
// delete it): the job waits, with an event saying why, and starts once it
// is gone.
func TestSnapshotConfigMapOfAnotherObjectIsLeftAlone(t *testing.T) {
	h := startHarness(t)
	g := gomega.NewWithT(t)
	ns := h.newNamespace(t)
	rtName := h.clusterRuntime(t, ns, "big", bigRuntimeSpec("torch:runtime", 300<<10))
	users := &corev1.ConfigMap{}
	users.Namespace, users.Name = ns, "big"+TrainerSnapshotSuffix
	users.Data = map[string]string{"runtime": "the user's"}
	h.create(t, users)
	h.create(t, newTrainJob(ns, "big", rtName).Obj())

	g.Eventually(func() string { return strings.Join(h.eventNotes(ns, "big"), "\n") }).WithTimeout(20 * time.Second).
		Should(gomega.ContainSubstring("ConfigMap big-runtime-snapshot, where it goes instead, belongs to another object"))
	g.Expect(h.c.Get(context.Background(), client.ObjectKeyFromObject(users), users)).To(gomega.Succeed())
	g.Expect(users.OwnerReferences).To(gomega.BeEmpty())
	g.Expect(users.Data).To(gomega.Equal(map[string]string{"runtime": "the user's"}))
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "big"}, &jobsetv1alpha2.JobSet{})).NotTo(gomega.Succeed())

	g.Expect(h.c.Delete(context.Background(), users)).To(gomega.Succeed())
	h.forceReconcile(t, h.trainJob(g, ns, "big"))
	h.eventuallyJobSet(t, ns, "big")
}
