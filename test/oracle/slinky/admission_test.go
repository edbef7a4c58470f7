package slinky_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gantry-dev/gantry/pkg/webhook"
)

// TestCorpusIsAdmitted: every case is one a user could apply to Gantry;
// its CRs pass Gantry's admission webhooks (warnings allowed), so the
// oracle compares what Gantry really builds.
func TestCorpusIsAdmitted(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, c := range prepare(t) {
		s, err := newGantryStore(c.gantryDocs)
		if err != nil {
			t.Fatal(err)
		}
		var cms []client.Object
		for _, cm := range s.configMaps {
			cms = append(cms, cm.DeepCopy())
		}
		reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cms...).Build()
		check := func(kind, name string, err error) {
			if err != nil {
				t.Errorf("%s: %s %s refused by Gantry's webhook: %v", c.name, kind, name, err)
			}
		}
		for _, o := range s.controllers {
			_, err := (&webhook.ControllerValidator{Reader: reader}).ValidateCreate(ctx, o)
			check("Controller", o.Name, err)
		}
		for _, o := range s.nodeSets {
			_, err := (&webhook.NodeSetValidator{}).ValidateCreate(ctx, o)
			check("NodeSet", o.Name, err)
		}
		for _, o := range s.restApis {
			_, err := (&webhook.RestApiValidator{}).ValidateCreate(ctx, o)
			check("RestApi", o.Name, err)
		}
		for _, o := range s.loginSets {
			_, err := (&webhook.LoginSetValidator{}).ValidateCreate(ctx, o)
			check("LoginSet", o.Name, err)
		}
		for _, o := range s.accountings {
			_, err := (&webhook.AccountingValidator{}).ValidateCreate(ctx, o)
			check("Accounting", o.Name, err)
		}
	}
}
