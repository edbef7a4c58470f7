package builder

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// slurmdBase is an operator pod template shaped like the NodeSet's.
func slurmdBase() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{LabelManagedBy: ManagedByGantry, LabelName: "slurmd"},
			Annotations: map[string]string{"gantry.dev/hash": "abc"},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			NodeSelector:                 map[string]string{"pool": "default"},
			Tolerations: []corev1.Toleration{{Key: "nodeset.slinky.slurm.net/worker", Operator: corev1.TolerationOpEqual,
				Effect: corev1.TaintEffectNoExecute}},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](401), FSGroup: ptr.To[int64](401)},
			InitContainers: []corev1.Container{{
				Name: "logfile", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Command:      []string{"sh", "-c", "cat"},
				VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log/slurm"}},
			}},
			Containers: []corev1.Container{{
				Name: "slurmd", Image: "slurmd:25.11", Args: []string{"-Z"},
				Env:   []corev1.EnvVar{{Name: "POD_CPUS", Value: "0"}, {Name: "POD_MEMORY", Value: "0"}},
				Ports: []corev1.ContainerPort{{Name: "slurmd", ContainerPort: 6818, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 10, ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("slurmd")}}},
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts: []corev1.VolumeMount{{Name: "etc", MountPath: "/etc/slurm", ReadOnly: true},
					{Name: "logs", MountPath: "/var/log/slurm"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "etc", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "slurm-config"}}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
			},
		},
	}
}

// decodeUserTemplate decodes a user's template as the Slinky CRDs do
// (metadata plus a PodSpecWrapper) and shapes it as the controllers pass it
// to MergePodTemplate.
func decodeUserTemplate(t *testing.T, text string) corev1.PodTemplateSpec {
	t.Helper()
	var pt slinkyv1beta1.PodTemplate
	if err := json.Unmarshal([]byte(text), &pt); err != nil {
		t.Fatalf("decoding the user's template: %v", err)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: pt.Metadata.Labels, Annotations: pt.Metadata.Annotations},
		Spec:       pt.Spec.PodSpec,
	}
}

// libraryMerge is the reference: the strategic merge library applied to the
// operator's template with patch as the patch, then the operator's labels
// and annotations put back on top.
func libraryMerge(t *testing.T, base corev1.PodTemplateSpec, patch string) corev1.PodTemplateSpec {
	t.Helper()
	original, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(original, []byte(patch), corev1.PodTemplateSpec{})
	if err != nil {
		t.Fatalf("library: %v", err)
	}
	var out corev1.PodTemplateSpec
	if err := json.Unmarshal(merged, &out); err != nil {
		t.Fatal(err)
	}
	out.Labels = MergeLabels(out.Labels, base.Labels)
	out.Annotations = MergeLabels(out.Annotations, base.Annotations)
	return out
}

// sortKeyedLists sorts the lists the API merges by key by that key. The
// library treats their order as insignificant (its own tests compare them
// sorted); MergePodTemplate's order is checked on its own.
func sortKeyedLists(p *corev1.PodTemplateSpec) {
	byName := func(a, b corev1.Container) int { return strings.Compare(a.Name, b.Name) }
	sortContainer := func(c *corev1.Container) {
		slices.SortStableFunc(c.Env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
		slices.SortStableFunc(c.Ports, func(a, b corev1.ContainerPort) int { return int(a.ContainerPort - b.ContainerPort) })
		slices.SortStableFunc(c.VolumeMounts, func(a, b corev1.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
	}
	slices.SortStableFunc(p.Spec.Containers, byName)
	slices.SortStableFunc(p.Spec.InitContainers, byName)
	for i := range p.Spec.Containers {
		sortContainer(&p.Spec.Containers[i])
	}
	for i := range p.Spec.InitContainers {
		sortContainer(&p.Spec.InitContainers[i])
	}
	slices.SortStableFunc(p.Spec.Volumes, func(a, b corev1.Volume) int { return strings.Compare(a.Name, b.Name) })
}

// operatorFirst is the order MergePodTemplate promises for a keyed list:
// the operator's keys in order, then the user's other keys in order.
func operatorFirst(base, user []string) []string {
	out := slices.Clone(base)
	for _, k := range user {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func names[T any](list []T, key func(T) string) []string {
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, key(e))
	}
	return out
}

func containerNames(l []corev1.Container) []string {
	return names(l, func(c corev1.Container) string { return c.Name })
}

func envNames(l []corev1.EnvVar) []string {
	return names(l, func(e corev1.EnvVar) string { return e.Name })
}

// TestMergePodTemplateMatchesLibrary is the differential test: for each user
// template, MergePodTemplate must give what the strategic merge library
// gives when called directly with the operator's template as the document
// and the user's JSON as the patch, the operator's labels winning. Where
// Gantry adds a directive the user's typed template cannot carry
// (libraryPatch), the reference is the library applied to the user's JSON
// with that directive written out, as a careful user would send it to the
// API server.
func TestMergePodTemplateMatchesLibrary(t *testing.T) {
	tests := []struct {
		name         string
		user         string
		libraryPatch string // the patch for the reference, when it is not user
	}{
		{name: "empty template", user: `{}`},
		{name: "ports merge by containerPort", user: `{"spec":{"containers":[{"name":"slurmd","ports":[
			{"containerPort":6818,"hostPort":16818},{"name":"metrics","containerPort":9100}]}]}}`},
		{name: "env overridden and added", user: `{"spec":{"containers":[{"name":"slurmd","env":[
			{"name":"POD_CPUS","value":"8"},{"name":"EXTRA","value":"$(POD_CPUS)"}]}]}}`},
		{name: "env added before an overridden one", user: `{"spec":{"containers":[{"name":"slurmd","env":[
			{"name":"EXTRA","value":"x"},{"name":"POD_MEMORY","value":"1024"}]}]}}`},
		{name: "volume of the same kind merges", user: `{"spec":{"volumes":[{"name":"logs","emptyDir":{"sizeLimit":"1Gi"}}]}}`},
		{name: "new volume and mount", user: `{"spec":{
			"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}}],
			"containers":[{"name":"slurmd","volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"etc2","mountPath":"/etc/slurm"}]}]}}`},
		{name: "new containers appended", user: `{"spec":{"containers":[
			{"name":"exporter","image":"exporter:1","ports":[{"containerPort":9100}]},{"name":"sidecar","image":"fluentbit"}]}}`},
		{name: "init containers merged and added", user: `{"spec":{"initContainers":[
			{"name":"setup","image":"busybox","command":["true"]},{"name":"logfile","image":"alpine"}]}}`},
		{name: "tolerations replaced", user: `{"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}]}}`},
		{name: "nodeSelector merged", user: `{"spec":{"nodeSelector":{"gpu":"a100","pool":"gpu"}}}`},
		{name: "pod securityContext merged", user: `{"spec":{"securityContext":{"runAsUser":1000,"supplementalGroups":[5]}}}`},
		{name: "container securityContext and resources merged", user: `{"spec":{"containers":[{"name":"slurmd",
			"securityContext":{"privileged":false,"capabilities":{"add":["SYS_ADMIN"]}},
			"resources":{"requests":{"cpu":"4"},"limits":{"memory":"8Gi"}}}]}}`},
		{name: "probe fields merged", user: `{"spec":{"containers":[{"name":"slurmd","readinessProbe":{"periodSeconds":30,"failureThreshold":6}}]}}`},
		{name: "args replaced", user: `{"spec":{"containers":[{"name":"slurmd","args":["-Z","-vvv"]}]}}`},
		{name: "scalars and affinity", user: `{"spec":{"hostNetwork":true,"dnsPolicy":"ClusterFirstWithHostNet",
			"automountServiceAccountToken":true,"priorityClassName":"high",
			"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
				{"matchExpressions":[{"key":"gpu","operator":"Exists"}]}]}}}}}`},
		{name: "labels and annotations: the operator's win", user: `{"metadata":{
			"labels":{"app.kubernetes.io/name":"mine","team":"hpc"},"annotations":{"gantry.dev/hash":"x","note":"y"}}}`},

		// Directives Gantry adds.
		{
			name:         "volume source replaced ($retainKeys)",
			user:         `{"spec":{"volumes":[{"name":"logs","hostPath":{"path":"/var/log/slurm"}}]}}`,
			libraryPatch: `{"spec":{"volumes":[{"name":"logs","hostPath":{"path":"/var/log/slurm"},"$retainKeys":["hostPath","name"]}]}}`,
		},
		{
			name: "env value replaced by valueFrom (null)",
			user: `{"spec":{"containers":[{"name":"slurmd","env":[
				{"name":"POD_CPUS","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu"}}}]}]}}`,
			libraryPatch: `{"spec":{"containers":[{"name":"slurmd","env":[
				{"name":"POD_CPUS","value":null,"valueFrom":{"resourceFieldRef":{"resource":"limits.cpu"}}}]}]}}`,
		},
		{
			name:         "probe handler replaced (null)",
			user:         `{"spec":{"containers":[{"name":"slurmd","readinessProbe":{"exec":{"command":["true"]}}}]}}`,
			libraryPatch: `{"spec":{"containers":[{"name":"slurmd","readinessProbe":{"exec":{"command":["true"]},"httpGet":null}}]}}`,
		},
		{
			name: "named port moved ($patch: delete)",
			user: `{"spec":{"containers":[{"name":"slurmd","ports":[{"name":"slurmd","containerPort":7000}]}]}}`,
			libraryPatch: `{"spec":{"containers":[{"name":"slurmd","ports":[
				{"name":"slurmd","containerPort":7000},{"$patch":"delete","containerPort":6818}]}]}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := slurmdBase()
			user := decodeUserTemplate(t, tc.user)
			patch := tc.user
			if tc.libraryPatch != "" {
				patch = tc.libraryPatch
			}
			got := MergePodTemplate(base, user)
			want := libraryMerge(t, base, patch)

			// The order: the operator's elements first.
			if w, g := operatorFirst(containerNames(base.Spec.Containers), containerNames(user.Spec.Containers)), containerNames(got.Spec.Containers); !slices.Equal(w, g) {
				t.Errorf("containers in order %v, want %v", g, w)
			}
			if w, g := operatorFirst(containerNames(base.Spec.InitContainers), containerNames(user.Spec.InitContainers)), containerNames(got.Spec.InitContainers); !slices.Equal(w, g) {
				t.Errorf("init containers in order %v, want %v", g, w)
			}
			for _, uc := range user.Spec.Containers {
				if uc.Name != "slurmd" {
					continue
				}
				if w, g := operatorFirst(envNames(base.Spec.Containers[0].Env), envNames(uc.Env)), envNames(got.Spec.Containers[0].Env); !slices.Equal(w, g) {
					t.Errorf("env in order %v, want %v", g, w)
				}
			}

			sortKeyedLists(&got)
			sortKeyedLists(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MergePodTemplate differs from the library (-library +MergePodTemplate):\n%s", diff)
			}
		})
	}
}

// TestMergeContainerMatchesLibrary checks MergeContainer the same way, with
// corev1.Container as the patch's type.
func TestMergeContainerMatchesLibrary(t *testing.T) {
	base := slurmdBase().Spec.Containers[0]
	tests := []struct{ name, user, libraryPatch string }{
		{name: "env, ports, mounts, resources", user: `{"image":"mine:1","env":[{"name":"POD_CPUS","value":"4"},{"name":"X","value":"1"}],
			"ports":[{"containerPort":6818,"hostPort":6818}],"volumeMounts":[{"name":"tmp","mountPath":"/tmp"}],
			"resources":{"limits":{"cpu":"2"}}}`},
		{name: "lifecycle hook", user: `{"lifecycle":{"preStop":{"sleep":{"seconds":5}}}}`},
		{
			name:         "probe handler replaced",
			user:         `{"readinessProbe":{"tcpSocket":{"port":6818}}}`,
			libraryPatch: `{"readinessProbe":{"tcpSocket":{"port":6818},"httpGet":null}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var user slinkyv1beta1.ContainerWrapper
			if err := json.Unmarshal([]byte(tc.user), &user); err != nil {
				t.Fatal(err)
			}
			patch := tc.user
			if tc.libraryPatch != "" {
				patch = tc.libraryPatch
			}
			original, err := json.Marshal(base)
			if err != nil {
				t.Fatal(err)
			}
			merged, err := strategicpatch.StrategicMergePatch(original, []byte(patch), corev1.Container{})
			if err != nil {
				t.Fatal(err)
			}
			var want corev1.Container
			if err := json.Unmarshal(merged, &want); err != nil {
				t.Fatal(err)
			}
			got := MergeContainer(base, user.Container)
			if w, g := operatorFirst(envNames(base.Env), envNames(user.Env)), envNames(got.Env); !slices.Equal(w, g) {
				t.Errorf("env in order %v, want %v", g, w)
			}
			wantPod := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{want}}}
			gotPod := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{got}}}
			sortKeyedLists(&wantPod)
			sortKeyedLists(&gotPod)
			if diff := cmp.Diff(wantPod, gotPod); diff != "" {
				t.Errorf("MergeContainer differs from the library (-library +MergeContainer):\n%s", diff)
			}
		})
	}
}

// TestUserDirectivesDoNotReachTheMerge documents a limit: the CRDs decode
// the user's template into typed corev1 values, which have no place for
// "$patch" or "$retainKeys", so such keys are gone before the merge. A
// "$patch: delete" meant to remove the operator's container removes
// nothing; "$patch: replace" on the tolerations replaces them only because
// a user's list replaces the operator's anyway.
func TestUserDirectivesDoNotReachTheMerge(t *testing.T) {
	base := slurmdBase()
	user := decodeUserTemplate(t, `{"spec":{
		"containers":[{"name":"slurmd","$patch":"delete"}],
		"volumes":[{"name":"logs","$retainKeys":["name"],"emptyDir":{}}],
		"nodeSelector":{"$patch":"replace","gpu":"yes"}}}`)
	got := MergePodTemplate(base, user)
	if len(got.Spec.Containers) != 1 || got.Spec.Containers[0].Image != "slurmd:25.11" {
		t.Errorf("containers = %+v, want the operator's slurmd kept", got.Spec.Containers)
	}
	if v := got.Spec.Volumes[1]; v.Name != "logs" || v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Errorf("volume logs = %+v, want the operator's emptyDir merged with the user's", v)
	}
	if diff := cmp.Diff(map[string]string{"pool": "default", "gpu": "yes"}, got.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
}

// TestStrategicMergeAcceptsAnyTypedValue feeds the merge random operator and
// user values, and values shaped to upset the library (directive-like map
// keys, keyed list elements without their key, duplicate keys, one-of
// fields both set), and requires that the library never refuses the patch:
// MergePodTemplate and MergeContainer rely on it.
func TestStrategicMergeAcceptsAnyTypedValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		var base, user corev1.PodSpec
		randomFill(r, reflect.ValueOf(&base).Elem(), 0)
		randomFill(r, reflect.ValueOf(&user).Elem(), 0)
		if _, err := strategicMerge(&base, &user); err != nil {
			t.Fatalf("pod spec %d: %v\nbase: %s\nuser: %s", i, err, mustJSON(base), mustJSON(user))
		}
		var bc, uc corev1.Container
		randomFill(r, reflect.ValueOf(&bc).Elem(), 0)
		randomFill(r, reflect.ValueOf(&uc).Elem(), 0)
		if _, err := strategicMerge(&bc, &uc); err != nil {
			t.Fatalf("container %d: %v\nbase: %s\nuser: %s", i, err, mustJSON(bc), mustJSON(uc))
		}
	}

	// Hand-made cases.
	base := slurmdBase().Spec
	base.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "a"}, {}}
	user := corev1.PodSpec{
		NodeSelector:     map[string]string{"$patch": "delete", "$retainKeys": "x", "$setElementOrder/a": "b", "gpu": "yes"},
		ImagePullSecrets: []corev1.LocalObjectReference{{}, {Name: "b"}},
		Containers: []corev1.Container{{
			Name: "slurmd",
			Env: []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "X", Value: "2"}, {Name: "POD_CPUS", Value: "3",
				ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "a"}}}},
			Ports: []corev1.ContainerPort{{Name: "slurmd", ContainerPort: 1}, {Name: "slurmd", ContainerPort: 2}},
		}, {Name: "slurmd", Image: "again"}},
	}
	got, err := strategicMerge(&base, &user)
	if err != nil {
		t.Fatal(err)
	}
	if got.NodeSelector["gpu"] != "yes" || got.NodeSelector["pool"] != "default" || len(got.NodeSelector) != 2 {
		t.Errorf("nodeSelector = %v: directive-like keys must be dropped, the rest merged", got.NodeSelector)
	}
	if len(got.Containers) != 1 || got.Containers[0].Image != "again" {
		t.Errorf("containers = %+v, want one slurmd with both user entries merged into it", got.Containers)
	}
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// fuzzStrings are the strings randomFill draws from: few, so that merge keys
// of the two sides often meet, and some spelled like patch directives.
var fuzzStrings = []string{"", "a", "b", "c", "delete", "replace", "$patch", "$retainKeys",
	"$setElementOrder/a", "$deleteFromPrimitiveList/b", "$x"}

// randomFill sets v to a random value of its type: pointers, slices and maps
// are often left nil, strings come from fuzzStrings and numbers are small.
// Types whose JSON form has rules of its own get valid random values.
func randomFill(r *rand.Rand, v reflect.Value, depth int) {
	const maxDepth = 10
	switch v.Addr().Interface().(type) {
	case *resource.Quantity:
		v.Set(reflect.ValueOf(*resource.NewQuantity(int64(r.IntN(4)), resource.DecimalSI)))
		return
	case *intstr.IntOrString:
		if r.IntN(2) == 0 {
			v.Set(reflect.ValueOf(intstr.FromInt32(int32(r.IntN(3)))))
		} else {
			v.Set(reflect.ValueOf(intstr.FromString(fuzzStrings[r.IntN(3)])))
		}
		return
	case *metav1.Time, *metav1.FieldsV1:
		return
	}
	skip := depth > maxDepth || r.IntN(10) < 4
	switch v.Kind() {
	case reflect.Pointer:
		if !skip {
			p := reflect.New(v.Type().Elem())
			randomFill(r, p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randomFill(r, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if !skip {
			n := r.IntN(4)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				randomFill(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		if !skip {
			m := reflect.MakeMap(v.Type())
			for range r.IntN(4) {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				randomFill(r, k, depth+1)
				randomFill(r, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.String:
		v.SetString(fuzzStrings[r.IntN(len(fuzzStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.IntN(3)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(r.IntN(3)))
	}
}
