// Package events is the one way Gantry's reconcilers record Kubernetes
// events.
//
// Contract:
//   - A Recorder is nil-safe: the zero value, or one made from a nil
//     events.EventRecorder, records nothing, so no reconciler guards its
//     recorder.
//   - Every event carries Action, the events API's mandatory action.
//   - Warnings about a failure are recorded at once, one per failure, so the
//     reasons upstream operators use stay intact for alerts.
//   - What a reconcile changed (objects created, updated, deleted) goes into
//     a Log, which the reconciler flushes after its status write, as
//     JobSet's controller does: an event never claims something the status
//     does not show yet. A Log records at most one event per reason, its
//     messages joined by "; ": every event is an API write.
//
// The recorder is the one controller-runtime's manager hands out from
// GetEventRecorder (k8s.io/client-go/tools/events); GetEventRecorderFor and
// its record.EventRecorder are deprecated in controller-runtime v0.24.
package events
