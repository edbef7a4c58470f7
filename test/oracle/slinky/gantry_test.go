package slinky_test

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/accounting"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/loginset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/restapi"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
)

// gantryStore is a case's objects as Gantry's API server stores them.
type gantryStore struct {
	controllers []*slinkyv1beta1.Controller
	nodeSets    []*slinkyv1beta1.NodeSet
	restApis    []*slinkyv1beta1.RestApi
	loginSets   []*slinkyv1beta1.LoginSet
	accountings []*slinkyv1beta1.Accounting
	secrets     map[string]*corev1.Secret    // namespace/name
	configMaps  map[string]*corev1.ConfigMap // namespace/name
}

func newGantryStore(docs []map[string]any) (*gantryStore, error) {
	s := &gantryStore{secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
	for _, d := range docs {
		var err error
		switch d["kind"] {
		case "Controller":
			o := &slinkyv1beta1.Controller{}
			err = fromMap(d, o)
			s.controllers = append(s.controllers, o)
		case "NodeSet":
			o := &slinkyv1beta1.NodeSet{}
			err = fromMap(d, o)
			s.nodeSets = append(s.nodeSets, o)
		case "RestApi":
			o := &slinkyv1beta1.RestApi{}
			err = fromMap(d, o)
			s.restApis = append(s.restApis, o)
		case "LoginSet":
			o := &slinkyv1beta1.LoginSet{}
			err = fromMap(d, o)
			s.loginSets = append(s.loginSets, o)
		case "Accounting":
			o := &slinkyv1beta1.Accounting{}
			err = fromMap(d, o)
			s.accountings = append(s.accountings, o)
		case "Secret":
			o := &corev1.Secret{}
			err = fromMap(d, o)
			s.secrets[o.Namespace+"/"+o.Name] = o
		case "ConfigMap":
			o := &corev1.ConfigMap{}
			err = fromMap(d, o)
			s.configMaps[o.Namespace+"/"+o.Name] = o
		}
		if err != nil {
			return nil, fmt.Errorf("%v %v: %w", d["kind"], path(d, "metadata", "name"), err)
		}
	}
	return s, nil
}

// secretKey is the value of a Secret's key, as Gantry's refresolver reads
// it; an error when the Secret or the key is missing.
func (s *gantryStore) secretKey(namespace string, sel corev1.SecretKeySelector) ([]byte, error) {
	sec := s.secrets[namespace+"/"+sel.Name]
	if sec == nil {
		return nil, fmt.Errorf("Secret %s/%s not found", namespace, sel.Name)
	}
	v, ok := sec.Data[sel.Key]
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s has no key %q", namespace, sel.Name, sel.Key)
	}
	return v, nil
}

func (s *gantryStore) controller(namespace, name string) (*slinkyv1beta1.Controller, error) {
	for _, c := range s.controllers {
		if c.Namespace == namespace && c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("Controller %s/%s not found", namespace, name)
}

// gantryResult is what Gantry's builders made for a case, by "Kind/name",
// and the errors its reconcilers would report, by the same key.
type gantryResult struct {
	objects map[string]map[string]any
	errors  map[string]string
}

func (r *gantryResult) add(key string, obj any) { r.objects[key] = toMap(obj) }
func (r *gantryResult) fail(key string, err error) {
	r.errors[key] = err.Error()
}

// keyOf is "Kind/name" of a built object.
func keyOf(kind string, meta metav1.ObjectMeta) string { return kind + "/" + meta.Name }

// buildGantry builds a case's objects with Gantry's builders, from the
// inputs Gantry's reconcilers give them (pkg/controller/slurm/*/reconciler.go:
// the same references read, the same default images). Hash values are
// computed as Gantry's reconcilers compute them; the oracle compares which
// hash annotations there are, not their values (see normalize).
func buildGantry(docs []map[string]any, pods []renderPod, hostKeys bool) (*gantryResult, error) {
	s, err := newGantryStore(docs)
	if err != nil {
		return nil, err
	}
	res := &gantryResult{objects: map[string]map[string]any{}, errors: map[string]string{}}
	images := slinky.DefaultImages()

	for _, c := range s.controllers {
		buildController(s, res, c, images)
	}
	for _, n := range s.nodeSets {
		owners := sharedOwners(s, n)
		svc := nodeset.BuildWorkerService(n, owners)
		res.add(keyOf("Service", svc.ObjectMeta), svc)
		pdb := nodeset.BuildWorkerPDB(n, owners)
		res.add(keyOf("PodDisruptionBudget", pdb.ObjectMeta), pdb)
		if n.Spec.Ssh.Enabled {
			cm := nodeset.BuildSshConfigMap(n)
			res.add(keyOf("ConfigMap", cm.ObjectMeta), cm)
		}
	}
	for _, p := range pods {
		buildPod(s, res, p, images)
	}
	for _, r := range s.restApis {
		svc := restapi.BuildService(r)
		res.add(keyOf("Service", svc.ObjectMeta), svc)
		key := "Deployment/" + slinky.RestApiName(r.Name)
		c, err := s.controller(r.Namespace, r.Spec.ControllerRef.Name)
		if err != nil {
			res.fail(key, err)
			continue
		}
		in := restapi.DeploymentInputs{Controller: c, Image: images.Slurmrestd}
		if ref := c.Spec.SlurmKeyRef; ref != nil {
			v, err := s.secretKey(c.Namespace, *ref)
			if err != nil {
				res.fail(key, err)
				continue
			}
			in.SlurmKeyHash = slinky.HashBytes(v)
		}
		d := restapi.BuildDeployment(r, in)
		res.add(keyOf("Deployment", d.ObjectMeta), d)
	}
	for _, l := range s.loginSets {
		buildLoginSet(s, res, l, hostKeys)
	}
	for _, a := range s.accountings {
		buildAccounting(s, res, a, images)
	}
	return res, nil
}

// buildController follows slurmctld's reconciler: Services, ConfigMap,
// StatefulSet, ServiceMonitor; for an external slurmctld the ConfigMap only.
func buildController(s *gantryStore, res *gantryResult, c *slinkyv1beta1.Controller, images slinky.Images) {
	in := slurmctld.ConfigInputs{}
	cmKey := "ConfigMap/" + slinky.ControllerConfigMapName(c.Name)
	if ref := c.Spec.AccountingRef; ref != nil && ref.Name != "" {
		for _, a := range s.accountings {
			if a.Namespace == c.Namespace && a.Name == ref.Name {
				in.Accounting = a
			}
		}
	}
	if c.Spec.External {
		cm := slurmctld.BuildConfigMap(c, in)
		res.add(keyOf("ConfigMap", cm.ObjectMeta), cm)
		return
	}
	internal := slurmctld.BuildInternalService(c)
	res.add(keyOf("Service", internal.ObjectMeta), internal)
	svc := slurmctld.BuildService(c)
	res.add(keyOf("Service", svc.ObjectMeta), svc)

	for _, n := range s.nodeSets {
		if n.DeletionTimestamp == nil && n.ControllerKey() == controllerKey(c) {
			in.NodeSets = append(in.NodeSets, *n)
		}
	}
	userFiles, err := in.ReadUserFiles(c, func(name string) (*corev1.ConfigMap, error) {
		if cm := s.configMaps[c.Namespace+"/"+name]; cm != nil {
			return cm, nil
		}
		return nil, fmt.Errorf("ConfigMap %s/%s not found", c.Namespace, name)
	})
	if err != nil {
		res.fail(cmKey, err)
		return
	}
	cm := slurmctld.BuildConfigMap(c, in)
	res.add(keyOf("ConfigMap", cm.ObjectMeta), cm)

	stsKey := "StatefulSet/" + slinky.ControllerStatefulSetName(c.Name)
	hashInput := maps.Clone(cm.Data)
	maps.Copy(hashInput, userFiles)
	pod := slurmctld.PodInputs{ConfigHash: slinky.HashStrings(hashInput), Images: images}
	if ref := c.Spec.SlurmKeyRef; ref != nil {
		v, err := s.secretKey(c.Namespace, *ref)
		if err != nil {
			res.fail(stsKey, err)
			return
		}
		pod.SlurmKeyHash = slinky.HashBytes(v)
	}
	if ref := c.Spec.EffectiveJwtKeyRef(); ref != nil {
		v, err := s.secretKey(c.Namespace, *ref)
		if err != nil {
			res.fail(stsKey, err)
			return
		}
		pod.JwtKeyHash = slinky.HashBytes(v)
	}
	sts := slurmctld.BuildStatefulSet(c, pod)
	res.add(keyOf("StatefulSet", sts.ObjectMeta), sts)
	if c.Spec.Metrics.Enabled && c.Spec.Metrics.ServiceMonitor.Enabled {
		sm := slurmctld.BuildServiceMonitor(c)
		res.objects["ServiceMonitor/"+sm.GetName()] = sm.Object
	}
}

func controllerKey(c *slinkyv1beta1.Controller) types.NamespacedName {
	return types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
}

// sharedOwners are the owners Gantry gives the workers' Service and PDB:
// every NodeSet of the Controller, by name (nodeset.Reconciler.sharedOwners).
func sharedOwners(s *gantryStore, n *slinkyv1beta1.NodeSet) []metav1.OwnerReference {
	var same []*slinkyv1beta1.NodeSet
	for _, o := range s.nodeSets {
		if o.Namespace == n.Namespace && o.ControllerKey() == n.ControllerKey() && o.DeletionTimestamp == nil {
			same = append(same, o)
		}
	}
	slices.SortFunc(same, func(a, b *slinkyv1beta1.NodeSet) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	owners := make([]metav1.OwnerReference, 0, len(same))
	for _, o := range same {
		owners = append(owners, metav1.OwnerReference{
			APIVersion: slinkyv1beta1.GroupVersion.String(), Kind: slinkyv1beta1.NodeSetKind,
			Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(true),
		})
	}
	return owners
}

// buildPod builds one slurmd pod as the NodeSet reconciler does (scale.go,
// daemon_sync.go), with the ssh hashes its loadSsh computes.
func buildPod(s *gantryStore, res *gantryResult, p renderPod, images slinky.Images) {
	key := fmt.Sprintf("Pod/%s@%d", p.NodeSet, p.Ordinal)
	if p.Node != "" {
		key = "Pod/" + p.NodeSet + "@" + p.Node
	}
	var n *slinkyv1beta1.NodeSet
	for _, o := range s.nodeSets {
		if o.Name == p.NodeSet {
			n = o
		}
	}
	if n == nil {
		res.fail(key, fmt.Errorf("no NodeSet %q", p.NodeSet))
		return
	}
	c, err := s.controller(n.ControllerKey().Namespace, n.ControllerKey().Name)
	if err != nil {
		res.fail(key, err)
		return
	}
	in := nodeset.PodInputs{Controller: c, RevisionHash: p.Revision, Images: images}
	if n.Spec.Ssh.Enabled {
		in.Ssh.SshdConf = slinky.HashBytes([]byte(nodeset.BuildSshdConfig(n)))
		if v, err := s.secretKey(n.Namespace, n.Spec.Ssh.SssdConfRef); err == nil {
			in.Ssh.SssdConf = slinky.HashBytes(v)
		} else {
			in.Ssh.SssdConf = slinky.HashBytes(nil)
		}
	}
	var pod *corev1.Pod
	if p.Node != "" {
		pod = nodeset.BuildDaemonPod(n, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p.Node}}, in)
	} else {
		pod = nodeset.BuildPod(n, p.Ordinal, in)
	}
	res.add(key, pod)
}

// buildLoginSet follows the LoginSet reconciler: host keys, ssh config,
// Service, Deployment.
func buildLoginSet(s *gantryStore, res *gantryResult, l *slinkyv1beta1.LoginSet, hostKeys bool) {
	files := map[string]string{}
	if hostKeys {
		keys, err := loginset.BuildHostKeysSecret(l)
		if err != nil {
			res.fail("Secret/"+loginset.HostKeysSecretName(l), err)
			return
		}
		res.add(keyOf("Secret", keys.ObjectMeta), keys)
		for k, v := range keys.Data {
			files[k] = string(v)
		}
	}
	cm := loginset.BuildSshConfig(l)
	res.add(keyOf("ConfigMap", cm.ObjectMeta), cm)
	svc := loginset.BuildService(l)
	res.add(keyOf("Service", svc.ObjectMeta), svc)

	key := "Deployment/" + loginset.DeploymentName(l)
	c, err := s.controller(l.Namespace, l.Spec.ControllerRef.Name)
	if err != nil {
		res.fail(key, err)
		return
	}
	in := loginset.DeploymentInputs{Controller: c, SshdConfHash: slinky.HashStrings(cm.Data),
		HostKeysHash: slinky.HashStrings(files), Images: loginset.DefaultImages()}
	if ref := c.Spec.SlurmKeyRef; ref != nil {
		v, err := s.secretKey(c.Namespace, *ref)
		if err != nil {
			res.fail(key, err)
			return
		}
		in.SlurmKeyHash = slinky.HashBytes(v)
	}
	sssd, err := s.secretKey(l.Namespace, l.Spec.SssdConfRef)
	if err != nil {
		res.fail(key, err)
		return
	}
	in.SssdConfHash = slinky.HashBytes(sssd)
	d := loginset.BuildDeployment(l, in)
	res.add(keyOf("Deployment", d.ObjectMeta), d)
}

// buildAccounting follows the Accounting reconciler: spec check, Service,
// keys, slurmdbd.conf Secret, StatefulSet; nothing for an external one.
func buildAccounting(s *gantryStore, res *gantryResult, a *slinkyv1beta1.Accounting, images slinky.Images) {
	if a.Spec.External {
		return
	}
	name := slinky.AccountingName(a.Name)
	if errs := accounting.ValidateSpec(a); len(errs) > 0 {
		for _, k := range []string{"Service/", "Secret/", "StatefulSet/"} {
			res.fail(k+name, errs.ToAggregate())
		}
		return
	}
	svc := accounting.BuildService(a)
	res.add(keyOf("Service", svc.ObjectMeta), svc)
	in := accounting.PodInputs{Image: images.Slurmdbd}
	fail := func(err error) {
		res.fail("Secret/"+name, err)
		res.fail("StatefulSet/"+name, err)
	}
	if ref := a.Spec.SlurmKeyRef; ref != nil {
		v, err := s.secretKey(a.Namespace, *ref)
		if err != nil {
			fail(err)
			return
		}
		in.SlurmKeyHash = slinky.HashBytes(v)
	}
	if ref := a.Spec.EffectiveJwtKeyRef(); ref != nil {
		v, err := s.secretKey(a.Namespace, *ref)
		if err != nil {
			fail(err)
			return
		}
		in.JwtKeyHash = slinky.HashBytes(v)
	}
	password, err := s.secretKey(a.Namespace, a.Spec.StorageConfig.PasswordKeyRef)
	if err != nil {
		fail(err)
		return
	}
	conf, err := accounting.RenderSlurmdbdConf(a, string(password))
	if err != nil {
		fail(err)
		return
	}
	in.ConfHash = slinky.HashStrings(map[string]string{accounting.SlurmdbdConfFile: conf})
	sec := accounting.BuildConfigSecret(a, conf)
	res.add(keyOf("Secret", sec.ObjectMeta), sec)
	sts := accounting.BuildStatefulSet(a, in)
	res.add(keyOf("StatefulSet", sts.ObjectMeta), sts)
}
