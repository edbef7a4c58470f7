package restapi

// NewReconcilerForTest is newReconciler for the tests of package
// restapi_test that run a second reconciler beside the manager's, on a
// client or event recorder of their own.
var NewReconcilerForTest = newReconciler
