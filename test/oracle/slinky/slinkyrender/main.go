// Command slinkyrender builds, with Slinky slurm-operator's own builders,
// the objects Slinky's controllers would apply for each case it reads, and
// writes them as JSON. It is Slinky's side of the Slinky oracle
// (../oracle_test.go starts it); it decides nothing and compares nothing.
//
// Input (stdin): {"cases":[{"name":…,"objects":[…],"pods":[…]}]}; each
// object is a Slinky CR, Secret or ConfigMap as the API server would store
// it under Slinky's CRDs. Output (stdout): one result per case, the built
// objects by "Kind/name" and the builders' errors by the same key.
//
// What it calls, and when, follows Slinky's reconcilers
// (internal/controller/*/..._sync.go): for a Controller its Service, its
// config (the external one for an external Controller), its StatefulSet and,
// with metrics and a ServiceMonitor enabled, the ServiceMonitor; for a
// NodeSet the workers' Service and PodDisruptionBudget, the ssh config when
// ssh is enabled, and the pods the case asks for (NewNodeSetStatefulSetPod
// or NewNodeSetDaemonSetPod); for a RestApi its Service and Deployment; for
// a LoginSet its ssh config, Service and Deployment (and its host keys
// Secret when the case asks for it); for a non-external
// Accounting its Service, config Secret and StatefulSet. As in Slinky, each
// reconciler builds from a copy of its object with internal/defaults
// applied; what a builder reads through the client is as stored.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	slinkyv1beta1 "github.com/SlinkyProject/slurm-operator/api/v1beta1"
	"github.com/SlinkyProject/slurm-operator/internal/builder/accountingbuilder"
	"github.com/SlinkyProject/slurm-operator/internal/builder/controllerbuilder"
	"github.com/SlinkyProject/slurm-operator/internal/builder/loginbuilder"
	"github.com/SlinkyProject/slurm-operator/internal/builder/restapibuilder"
	"github.com/SlinkyProject/slurm-operator/internal/builder/workerbuilder"
	nodesetutils "github.com/SlinkyProject/slurm-operator/internal/controller/nodeset/utils"
	"github.com/SlinkyProject/slurm-operator/internal/defaults"
	"github.com/SlinkyProject/slurm-operator/internal/utils/refresolver"
)

// Pod asks for one slurmd pod of a NodeSet: by ordinal (StatefulSet
// scaling mode) or by the Kubernetes node it is for (DaemonSet mode).
type Pod struct {
	NodeSet  string `json:"nodeSet"`
	Ordinal  int    `json:"ordinal"`
	Node     string `json:"node,omitempty"`
	Revision string `json:"revision"`
}

type Case struct {
	Name    string            `json:"name"`
	Objects []json.RawMessage `json:"objects"`
	Pods    []Pod             `json:"pods"`
	// HostKeys asks for the LoginSets' host keys Secrets too: generating
	// an RSA key takes a while, so few cases do.
	HostKeys bool `json:"hostKeys"`
}

type Result struct {
	Name    string                     `json:"name"`
	Objects map[string]json.RawMessage `json:"objects"`
	Errors  map[string]string          `json:"errors,omitempty"`
}

func main() {
	var in struct {
		Cases []Case `json:"cases"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "slinkyrender: reading the cases:", err)
		os.Exit(2)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, slinkyv1beta1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, "slinkyrender:", err)
			os.Exit(2)
		}
	}
	out := make([]Result, 0, len(in.Cases))
	for _, c := range in.Cases {
		r, err := render(scheme, c)
		if err != nil {
			fmt.Fprintf(os.Stderr, "slinkyrender: case %q: %v\n", c.Name, err)
			os.Exit(2)
		}
		out = append(out, r)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "slinkyrender:", err)
		os.Exit(2)
	}
}

func render(scheme *runtime.Scheme, c Case) (Result, error) {
	res := Result{Name: c.Name, Objects: map[string]json.RawMessage{}, Errors: map[string]string{}}
	var objs []client.Object
	for _, raw := range c.Objects {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &tm); err != nil {
			return res, err
		}
		gv, err := schema.ParseGroupVersion(tm.APIVersion)
		if err != nil {
			return res, err
		}
		o, err := scheme.New(gv.WithKind(tm.Kind))
		if err != nil {
			return res, err
		}
		if err := json.Unmarshal(raw, o); err != nil {
			return res, fmt.Errorf("%s: %w", tm.Kind, err)
		}
		objs = append(objs, o.(client.Object))
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()

	// add records what a builder returned under "Kind/name" (key when it
	// returned an error); pods under the key the case asked for them by.
	add := func(key string, o client.Object, err error) {
		if err != nil {
			res.Errors[key] = err.Error()
			return
		}
		gvks, _, gerr := scheme.ObjectKinds(o)
		if gerr != nil {
			res.Errors[key] = gerr.Error()
			return
		}
		o.GetObjectKind().SetGroupVersionKind(gvks[0])
		if o.GetName() != "" && gvks[0].Kind != "Pod" {
			key = gvks[0].Kind + "/" + o.GetName()
		}
		data, merr := json.Marshal(o)
		if merr != nil {
			res.Errors[key] = merr.Error()
			return
		}
		res.Objects[key] = data
	}
	keyOf := func(kind, name string) string { return kind + "/" + name }

	for _, stored := range objs {
		o := stored.DeepCopyObject()
		setReconcilerDefaults(o)
		switch obj := o.(type) {
		case *slinkyv1beta1.Controller:
			b := controllerbuilder.New(cl)
			if obj.Spec.External {
				cm, err := b.BuildControllerConfigExternal(obj)
				add(keyOf("ConfigMap", obj.ConfigKey().Name), cm, err)
				continue
			}
			svc, err := b.BuildControllerService(obj)
			add(keyOf("Service", obj.ServiceKey().Name), svc, err)
			cm, err := b.BuildControllerConfig(obj)
			add(keyOf("ConfigMap", obj.ConfigKey().Name), cm, err)
			sts, err := b.BuildController(obj)
			add(keyOf("StatefulSet", obj.Key().Name), sts, err)
			if obj.Spec.Metrics.Enabled && obj.Spec.Metrics.ServiceMonitor.Enabled {
				sm, err := b.BuildControllerServiceMonitor(obj)
				add(keyOf("ServiceMonitor", obj.Key().Name), sm, err)
			}
		case *slinkyv1beta1.NodeSet:
			b := workerbuilder.New(cl)
			// The reconciler makes every NodeSet of the Controller an
			// owner of the objects they share (syncClusterWorkerService,
			// syncClusterWorkerPDB).
			svc, err := b.BuildClusterWorkerService(obj)
			if err == nil {
				err = nodesetutils.SetOwnerReferences(cl, context.TODO(), svc, obj.Spec.ControllerRef.Name)
			}
			add(keyOf("Service", "workers of "+obj.Name), svc, err)
			pdb, err := b.BuildClusterWorkerPodDisruptionBudget(obj)
			if err == nil {
				err = nodesetutils.SetOwnerReferences(cl, context.TODO(), pdb, obj.Spec.ControllerRef.Name)
			}
			add(keyOf("PodDisruptionBudget", "workers of "+obj.Name), pdb, err)
			if obj.Spec.Ssh.Enabled {
				cm, err := b.BuildWorkerSshConfig(obj)
				add(keyOf("ConfigMap", obj.SshConfigKey().Name), cm, err)
			}
		case *slinkyv1beta1.RestApi:
			b := restapibuilder.New(cl)
			svc, err := b.BuildRestapiService(obj)
			add(keyOf("Service", obj.ServiceKey().Name), svc, err)
			d, err := b.BuildRestapi(obj)
			add(keyOf("Deployment", obj.Key().Name), d, err)
		case *slinkyv1beta1.LoginSet:
			b := loginbuilder.New(cl)
			cm, err := b.BuildLoginSshConfig(obj)
			add(keyOf("ConfigMap", obj.SshConfigKey().Name), cm, err)
			svc, err := b.BuildLoginService(obj)
			add(keyOf("Service", obj.ServiceKey().Name), svc, err)
			d, err := b.BuildLogin(obj)
			add(keyOf("Deployment", obj.Key().Name), d, err)
			if c.HostKeys {
				keys, err := b.BuildLoginSshHostKeys(obj)
				add(keyOf("Secret", obj.SshHostKeys().Name), keys, err)
			}
		case *slinkyv1beta1.Accounting:
			if obj.Spec.External {
				continue
			}
			b := accountingbuilder.New(cl)
			svc, err := b.BuildAccountingService(obj)
			add(keyOf("Service", obj.ServiceKey().Name), svc, err)
			sec, err := b.BuildAccountingConfig(obj)
			add(keyOf("Secret", obj.ConfigKey().Name), sec, err)
			sts, err := b.BuildAccounting(obj)
			add(keyOf("StatefulSet", obj.Key().Name), sts, err)
		}
	}

	for _, p := range c.Pods {
		ns := &slinkyv1beta1.NodeSet{}
		if err := findNodeSet(objs, p.NodeSet, ns); err != nil {
			return res, err
		}
		setReconcilerDefaults(ns)
		key := keyOf("Pod", fmt.Sprintf("%s@%d", p.NodeSet, p.Ordinal))
		if p.Node != "" {
			key = keyOf("Pod", p.NodeSet+"@"+p.Node)
		}
		controller, err := refresolver.New(cl).GetController(context.TODO(), ns.Spec.ControllerRef)
		if err != nil {
			res.Errors[key] = err.Error()
			continue
		}
		var pod *corev1.Pod
		if p.Node != "" {
			pod = nodesetutils.NewNodeSetDaemonSetPod(cl, ns, controller, p.Node, p.Revision)
		} else {
			pod = nodesetutils.NewNodeSetStatefulSetPod(cl, ns, controller, p.Ordinal, p.Revision)
		}
		add(key, pod, nil)
	}
	if len(res.Errors) == 0 {
		res.Errors = nil
	}
	return res, nil
}

func findNodeSet(objs []client.Object, name string, into *slinkyv1beta1.NodeSet) error {
	for _, o := range objs {
		if n, ok := o.(*slinkyv1beta1.NodeSet); ok && n.Name == name {
			n.DeepCopyInto(into)
			return nil
		}
	}
	return fmt.Errorf("no NodeSet %q in the case", name)
}

// setReconcilerDefaults gives o the defaults Slinky's reconciler of its
// kind applies before building (each internal/controller/*/..._sync.go
// calls internal/defaults on a copy of its object).
func setReconcilerDefaults(o runtime.Object) {
	switch obj := o.(type) {
	case *slinkyv1beta1.Controller:
		defaults.SetControllerDefaults(obj)
	case *slinkyv1beta1.NodeSet:
		defaults.SetNodeSetDefaults(obj)
	case *slinkyv1beta1.RestApi:
		defaults.SetRestApiDefaults(obj)
	case *slinkyv1beta1.LoginSet:
		defaults.SetLoginSetDefaults(obj)
	case *slinkyv1beta1.Accounting:
		defaults.SetAccountingDefaults(obj)
	}
}
