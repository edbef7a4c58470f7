package raycluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// The seeds of the RayCluster targets are KubeRay's own samples
// (ray-operator/config/samples at v1.6.2, copied to testdata/samples), as
// JSON, plus a few hostile variants of the first one.

// sampleClusters returns the RayCluster documents of testdata/samples as
// JSON.
func sampleClusters(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no samples: %v", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var meta struct{ Kind string }
			if yaml.Unmarshal(doc, &meta) != nil || meta.Kind != rayv1.RayClusterKind {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		tb.Fatal("no RayCluster in testdata/samples")
	}
	return out
}

// hostileClusters are variants of a sample with the inputs issue #13 is
// about: odd group names, shell metacharacters in rayStartParams, odd
// Ray resource names and quantities.
func hostileClusters(tb testing.TB, base []byte) [][]byte {
	tb.Helper()
	mutate := func(f func(c *rayv1.RayCluster)) []byte {
		c := &rayv1.RayCluster{}
		if err := json.Unmarshal(base, c); err != nil {
			tb.Fatal(err)
		}
		f(c)
		out, err := json.Marshal(c)
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	return [][]byte{
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "1; touch /tmp/x", "object-manager-port": "$(id)", "x": "a\nb"}
		}),
		mutate(func(c *rayv1.RayCluster) {
			if len(c.Spec.WorkerGroupSpecs) > 0 {
				c.Spec.WorkerGroupSpecs[0].GroupName = "Group_With.Odd-Name"
				c.Spec.WorkerGroupSpecs[0].NumOfHosts = 2
			}
		}),
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.HeadGroupSpec.Resources = map[string]string{"custom": "1", "CPU": "2", "nvidia.com/gpu": "1"}
			c.Spec.HeadGroupSpec.Labels = map[string]string{"ray.io/zone": "a"}
		}),
		mutate(func(c *rayv1.RayCluster) {
			c.Spec.EnableInTreeAutoscaling = ptr.To(true)
			c.Spec.HeadGroupSpec.Template.Spec.Containers[0].Command = []string{"echo", "hi"}
			c.Annotations = map[string]string{rayv1.RayFTEnabledAnnotationKey: "true"}
		}),
	}
}

func decodeCluster(data []byte) (*rayv1.RayCluster, bool) {
	c := &rayv1.RayCluster{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, false
	}
	// The API server always sets these.
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if c.UID == "" {
		c.UID = "0e7f0b1c-uid"
	}
	return c, true
}

// FuzzValidateRayCluster: any RayCluster the API could hand the reconciler
// is accepted or refused without a panic, the same way every time, without
// being modified, and a refusal names a layer and a field (the webhook
// turns it into a field error). An accepted cluster is still accepted after
// a JSON round trip, as the API server stores it.
func FuzzValidateRayCluster(f *testing.F) {
	samples := sampleClusters(f)
	for _, s := range samples {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, s := range hostileClusters(f, samples[0]) {
		f.Add(s, false)
	}
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"r"}]}}},`+
		`"workerGroupSpecs":[{"groupName":"g","minReplicas":-1,"template":{"spec":{"containers":[{"name":"w"}]}}}]}}`), false)
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"authOptions":{"mode":"token"},"rayVersion":"x.y",`+
		`"headGroupSpec":{"template":{"spec":{"containers":[{"name":"r","env":[{"name":"RAY_enable_autoscaler_v2","value":"1"}]}]}}}}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, allowSuspend bool) {
		cluster, ok := decodeCluster(data)
		if !ok {
			return
		}
		opts := SpecValidationOptions{AllowWorkerGroupSuspend: allowSuspend}
		before := cluster.DeepCopy()
		err := Validate(cluster, opts)
		if !equality.Semantic.DeepEqual(before, cluster) {
			t.Fatal("Validate modified the cluster")
		}
		again := Validate(cluster, opts)
		if (err == nil) != (again == nil) || (err != nil && (err.Layer != again.Layer || err.Error() != again.Error())) {
			t.Fatalf("Validate is not deterministic: %v, then %v", err, again)
		}
		if err != nil {
			switch err.Layer {
			case ValidationLayerMetadata, ValidationLayerSpec, ValidationLayerUpgradeOptions, ValidationLayerStatus:
			default:
				t.Fatalf("unknown layer %q", err.Layer)
			}
			if err.Error() == "" || err.EventReason() == "" || err.EventMessage(cluster.Namespace, cluster.Name) == "" {
				t.Fatalf("empty message or reason for %#v", err)
			}
			if !errors.Is(err, err.Err) {
				t.Fatal("ValidationError does not unwrap to its cause")
			}
			fe := AsFieldError(err.Err, specPath)
			if fe == nil || fe.Field == "" || fe.Detail == "" {
				t.Fatalf("no field error for %v: %#v", err, fe)
			}
			return
		}
		// What validation promises to the builders.
		if len(cluster.Spec.HeadGroupSpec.Template.Spec.Containers) == 0 {
			t.Fatal("accepted a head without containers")
		}
		for i := range cluster.Spec.WorkerGroupSpecs {
			if len(cluster.Spec.WorkerGroupSpecs[i].Template.Spec.Containers) == 0 {
				t.Fatalf("accepted worker group %d without containers", i)
			}
		}
		if msgs := validation.IsDNS1035Label(cluster.Name); len(msgs) > 0 || len(cluster.Name) > MaxRayClusterNameLength {
			t.Fatalf("accepted cluster name %q: %v", cluster.Name, msgs)
		}
		raw, merr := json.Marshal(cluster)
		if merr != nil {
			t.Fatalf("an accepted cluster does not marshal: %v", merr)
		}
		stored := &rayv1.RayCluster{}
		if uerr := json.Unmarshal(raw, stored); uerr != nil {
			t.Fatalf("an accepted cluster does not unmarshal: %v", uerr)
		}
		if err := Validate(stored, opts); err != nil {
			t.Fatalf("accepted, but refused after a JSON round trip: %v\n%s", err, raw)
		}
	})
}

// FuzzBuildPods: the head and worker Pod builders, on any cluster
// validation accepts, return Pods without a panic, without modifying the
// cluster, the same Pods for the same input, with names the API server
// accepts (the head always; a worker when its group name can be part of a
// DNS name, which validation does not check, as in KubeRay), valid labels
// when the user's labels are valid, and the generated `ray start` in the
// command and in KUBERAY_GEN_RAY_START_CMD.
func FuzzBuildPods(f *testing.F) {
	samples := sampleClusters(f)
	accepted := 0
	for i, s := range samples {
		f.Add(s, uint8(i), uint16(i))
		if c, ok := decodeCluster(s); ok && Validate(c, SpecValidationOptions{AllowWorkerGroupSuspend: true}) == nil {
			accepted++
		}
	}
	// Otherwise the target would build nothing.
	if accepted < len(samples)/2 {
		f.Fatalf("validation accepts only %d of the %d samples", accepted, len(samples))
	}
	for i, s := range hostileClusters(f, samples[0]) {
		f.Add(s, uint8(0xff-i), uint16(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, flags uint8, index uint16) {
		cluster, ok := decodeCluster(data)
		if !ok || Validate(cluster, SpecValidationOptions{AllowWorkerGroupSuspend: true}) != nil {
			return
		}
		if len(cluster.Spec.WorkerGroupSpecs) > 4 {
			cluster.Spec.WorkerGroupSpecs = cluster.Spec.WorkerGroupSpecs[:4]
		}
		opts := DefaultBuildOptions()
		opts.OperatorVersion = "fuzz"
		opts.DeterministicHeadPodName = flags&1 != 0
		opts.LoginShell = flags&2 != 0
		opts.InjectProbes = flags&4 == 0
		opts.InjectWaitGCSReady = flags&8 == 0
		opts.MultiHostIndexing = flags&16 == 0
		opts.HeadClusterIPService = flags&32 != 0
		if flags&64 != 0 {
			opts.DefaultContainerEnvs = []corev1.EnvVar{{Name: "RAY_DEFAULT", Value: "1"}}
			opts.WorkerSidecarContainers = []corev1.Container{{Name: "sidecar", Image: "busybox"}}
		}
		before := cluster.DeepCopy()

		head := BuildHeadPod(cluster, opts)
		if again := BuildHeadPod(cluster, opts); !equality.Semantic.DeepEqual(head, again) {
			t.Fatal("BuildHeadPod is not deterministic")
		}
		checkRayPod(t, cluster, &head, rayv1.HeadNode, rayv1.RayNodeHeadGroupLabelValue, cluster.Spec.HeadGroupSpec.Template.Labels)
		if opts.DeterministicHeadPodName {
			if head.GenerateName != "" {
				t.Fatalf("deterministic head name, but generateName %q", head.GenerateName)
			}
			if msgs := validation.IsDNS1123Subdomain(head.Name); len(msgs) > 0 {
				t.Fatalf("head Pod name %q: %v", head.Name, msgs)
			}
		} else if msgs := validation.IsDNS1123Subdomain(head.GenerateName + "x7k2q"); len(msgs) > 0 || head.Name != "" {
			t.Fatalf("head Pod name %q generateName %q: %v", head.Name, head.GenerateName, msgs)
		}

		for i := range cluster.Spec.WorkerGroupSpecs {
			group := &cluster.Spec.WorkerGroupSpecs[i]
			r := WorkerReplica{Name: group.GroupName + "-x7k2q", Index: int(index), HostIndex: int(index) % int(group.Hosts())}
			pod := BuildWorkerPod(cluster, group, r, opts)
			if again := BuildWorkerPod(cluster, group, r, opts); !equality.Semantic.DeepEqual(pod, again) {
				t.Fatalf("BuildWorkerPod of group %q is not deterministic", group.GroupName)
			}
			// The replica name is the reconciler's "<group>-<5 random>", a
			// valid label value only for a group name of 1 to 57 label
			// characters, which validation does not require (nor does
			// KubeRay): see testdata/fuzz/FuzzBuildPods.
			var copied []string
			if group.Hosts() > 1 && opts.MultiHostIndexing {
				copied = append(copied, r.Name)
			}
			checkRayPod(t, cluster, &pod, rayv1.WorkerNode, group.GroupName, group.Template.Labels, copied...)
			if pod.Name != "" {
				t.Fatalf("worker Pod has a fixed name %q", pod.Name)
			}
			if len(validation.IsDNS1123Label(strings.ToLower(group.GroupName))) == 0 {
				if msgs := validation.IsDNS1123Subdomain(pod.GenerateName + "x7k2q"); len(msgs) > 0 {
					t.Fatalf("group %q: worker generateName %q: %v", group.GroupName, pod.GenerateName, msgs)
				}
			}
			if opts.InjectWaitGCSReady && containerIndex(pod.Spec.InitContainers, waitGCSReadyContainerName) < 0 {
				t.Fatalf("group %q: no %s init container", group.GroupName, waitGCSReadyContainerName)
			}
		}
		if !equality.Semantic.DeepEqual(before, cluster) {
			t.Fatal("the builders modified the cluster")
		}
		if SpecHash(&cluster.Spec) != SpecHash(&before.Spec) {
			t.Fatal("SpecHash is not deterministic")
		}
	})
}

// checkRayPod checks what every Ray Pod promises: the operator's labels,
// owner, the Ray container's command and the generated command's env var.
// copied are other values the builder puts in labels as it gets them.
func checkRayPod(t *testing.T, cluster *rayv1.RayCluster, pod *corev1.Pod, nodeType rayv1.RayNodeType, group string, templateLabels map[string]string, copied ...string) {
	t.Helper()
	if pod.Namespace != cluster.Namespace {
		t.Fatalf("%s Pod in namespace %q, cluster in %q", nodeType, pod.Namespace, cluster.Namespace)
	}
	want := map[string]string{
		rayv1.RayClusterLabelKey:   cluster.Name,
		rayv1.RayNodeTypeLabelKey:  string(nodeType),
		rayv1.RayNodeGroupLabelKey: group,
	}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Fatalf("%s Pod label %s = %q, want %q", nodeType, k, pod.Labels[k], v)
		}
	}
	// The user's labels are copied as they are; with valid ones (and a
	// group name and copied values that are valid label values) every
	// label is valid.
	userValid := len(validation.IsValidLabelValue(group)) == 0
	for _, v := range copied {
		userValid = userValid && len(validation.IsValidLabelValue(v)) == 0
	}
	for k, v := range templateLabels {
		userValid = userValid && len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0
	}
	if userValid {
		for k, v := range pod.Labels {
			if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
				t.Fatalf("%s Pod label %q=%q is invalid", nodeType, k, v)
			}
		}
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != cluster.UID {
		t.Fatalf("%s Pod owner references %+v", nodeType, pod.OwnerReferences)
	}
	if len(pod.Spec.Containers) == 0 {
		t.Fatalf("%s Pod has no containers", nodeType)
	}
	ray := &pod.Spec.Containers[0]
	gen, ok := envOf(ray, EnvKubeRayGenRayStartCmd)
	if !ok || !strings.HasPrefix(gen.Value, "ray start") {
		t.Fatalf("%s Pod: %s = %q", nodeType, EnvKubeRayGenRayStartCmd, gen.Value)
	}
	if strings.EqualFold(pod.Annotations[rayv1.RayOverwriteContainerCmdAnnotationKey], "true") {
		return
	}
	tmpl := cluster.Spec.HeadGroupSpec.Template
	if nodeType == rayv1.WorkerNode {
		for i := range cluster.Spec.WorkerGroupSpecs {
			if cluster.Spec.WorkerGroupSpecs[i].GroupName == group {
				tmpl = cluster.Spec.WorkerGroupSpecs[i].Template
			}
		}
	}
	user := strings.Join(append(slices.Clone(tmpl.Spec.Containers[0].Command), tmpl.Spec.Containers[0].Args...), " ")
	if strings.Contains(user, "ray start") {
		return
	}
	if len(ray.Command) != 3 || ray.Command[0] != "/bin/bash" || len(ray.Args) != 1 || !strings.HasSuffix(ray.Args[0], gen.Value) {
		t.Fatalf("%s Pod: command %q args %q do not end in %q", nodeType, ray.Command, ray.Args, gen.Value)
	}
}

// FuzzRayStartCommand: the `ray start` line for any rayStartParams, group
// resources and accelerator limits. No panic; params are not modified;
// every user flag is passed through as written (rayStartParams values are
// not shell-quoted, as in KubeRay: users quote JSON values themselves);
// and what the operator quotes itself, the --resources JSON it builds, is
// one shell word that decodes to the resources (those beyond float64 left
// out). With user flags made of
// characters the shell leaves alone, the whole line is plain words.
func FuzzRayStartCommand(f *testing.F) {
	for _, s := range sampleClusters(f) {
		c, ok := decodeCluster(s)
		if !ok {
			f.Fatal("a sample does not decode")
		}
		groups := []struct {
			params, resources map[string]string
			limits            corev1.ResourceList
		}{{c.Spec.HeadGroupSpec.RayStartParams, c.Spec.HeadGroupSpec.Resources, c.Spec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Limits}}
		for _, g := range c.Spec.WorkerGroupSpecs {
			groups = append(groups, struct {
				params, resources map[string]string
				limits            corev1.ResourceList
			}{g.RayStartParams, g.Resources, g.Template.Spec.Containers[0].Resources.Limits})
		}
		for i, g := range groups {
			accel, accelQty := uint8(0), ""
			if q, ok := g.limits["google.com/tpu"]; ok {
				accel, accelQty = 1, q.String()
			}
			resName, resQty := "", ""
			for _, k := range slices.Sorted(maps.Keys(g.resources)) {
				resName, resQty = k, g.resources[k]
			}
			userResources := g.params[paramResources]
			for _, k := range slices.Sorted(maps.Keys(g.params)) {
				f.Add(i == 0, k, g.params[k], userResources, resName, resQty, accel, accelQty)
			}
			if len(g.params) == 0 {
				f.Add(i == 0, "num-cpus", "1", userResources, resName, resQty, accel, accelQty)
			}
		}
	}
	f.Add(false, "num-cpus", "1; touch /tmp/x", "", "", "", uint8(0), "")
	f.Add(true, "object-store-memory", "$(id)", `'{"custom": 1}'`, "", "", uint8(1), "4")
	f.Add(false, "block", "TRUE", `"{\"a\":1}"`, "my_resource", "2", uint8(2), "1")
	f.Add(true, "dashboard-host", "0.0.0.0", "", "memory", "1Gi", uint8(0), "")
	f.Add(false, "x", "a\nb", "", "custom-res", "0.5", uint8(1), "8")
	f.Fuzz(func(t *testing.T, head bool, key, value, userResources, resName, resQty string, accel uint8, accelQty string) {
		nodeType := rayv1.WorkerNode
		if head {
			nodeType = rayv1.HeadNode
		}
		userParams := map[string]string{key: value}
		if userResources != "" {
			userParams[paramResources] = userResources
		}
		groupResources := map[string]string{}
		if resName != "" {
			groupResources[resName] = resQty
		}
		var req corev1.ResourceRequirements
		if q, err := resource.ParseQuantity(accelQty); err == nil {
			name := []corev1.ResourceName{"", "google.com/tpu", "aws.amazon.com/neuroncore", "nvidia.com/gpu", corev1.ResourceCPU, corev1.ResourceMemory}[int(accel)%6]
			if name != "" {
				req.Limits = corev1.ResourceList{name: q}
			}
		}
		userCopy := maps.Clone(userParams)
		params := completeRayStartParams(nodeType, userParams, groupResources, nil, "rc-head-svc.ns.svc.cluster.local:6379")
		if !maps.Equal(userParams, userCopy) {
			t.Fatal("completeRayStartParams modified the user's params")
		}
		paramsCopy := maps.Clone(params)
		cmd := GenerateRayStartCommand(nodeType, params, req)
		if !maps.Equal(params, paramsCopy) {
			t.Fatal("GenerateRayStartCommand modified params")
		}
		if again := GenerateRayStartCommand(nodeType, params, req); again != cmd {
			t.Fatalf("not deterministic: %q, then %q", cmd, again)
		}
		prefix := "ray start"
		if head {
			prefix += " --head"
		}
		if !strings.HasPrefix(cmd, prefix) {
			t.Fatalf("%q does not start with %q", cmd, prefix)
		}

		// The final flags, as GenerateRayStartCommand derives them.
		final := maps.Clone(params)
		addContainerResourceParams(final, req)
		inert := shellInert(key) && key != "" && shellInert(value) && shellInert(userResources)
		for k, v := range final {
			lower := strings.ToLower(v)
			switch {
			case lower == "true" && !explicitBooleanFlags[k]:
				if !containsFlag(cmd, "--"+k) {
					t.Fatalf("switch %q=%q missing in %q", k, v, cmd)
				}
			case lower == "false" && !explicitBooleanFlags[k]:
				// Another flag's value could contain " --k " when not inert.
				if inert && containsFlag(cmd, "--"+k) {
					t.Fatalf("switch %q=%q present in %q", k, v, cmd)
				}
			case !containsFlag(cmd, "--"+k+"="+v):
				t.Fatalf("flag %q=%q not passed through in %q", k, v, cmd)
			}
		}

		// What the operator quoted itself must be one shell word holding
		// the resources as JSON.
		fromGroup := map[string]string{}
		applyGroupResources(fromGroup, groupResources)
		operatorJSON := fromGroup[paramResources] != "" || final[paramResources] != params[paramResources]
		if operatorJSON {
			v := final[paramResources]
			words, err := shellWords(v)
			if err != nil || len(words) != 1 {
				t.Fatalf("--resources=%s is not one shell word (%v): %q", v, err, words)
			}
			var decoded map[string]float64
			if err := json.Unmarshal([]byte(words[0]), &decoded); err != nil || decoded == nil {
				t.Fatalf("--resources=%s: the shell passes %q, not a JSON object of resources (%v)", v, words[0], err)
			}
			// A quantity beyond float64 is left out, the others stay.
			if q, err := resource.ParseQuantity(resQty); fromGroup[paramResources] != "" && err == nil && utf8.ValidString(resName) {
				want := q.AsApproximateFloat64()
				got, ok := decoded[resName]
				if finite := !math.IsInf(want, 0) && !math.IsNaN(want); ok != finite || (ok && !approxEqual(got, want)) {
					t.Fatalf("--resources=%s: resource %q=%v decodes as %v (present %v)", v, resName, want, got, ok)
				}
			}
		}

		// With user input the shell leaves alone, the line is plain words.
		if inert {
			words, err := shellWords(cmd)
			if err != nil {
				t.Fatalf("%q is not a plain command: %v", cmd, err)
			}
			n := 2
			if head {
				n = 3
			}
			if len(words) < n {
				t.Fatalf("%q: words %q", cmd, words)
			}
			for _, w := range words[n:] {
				if !strings.HasPrefix(w, "--") {
					t.Fatalf("%q: word %q is not a flag", cmd, w)
				}
			}
		}
	})
}

func containsFlag(cmd, flag string) bool {
	return strings.Contains(cmd+" ", " "+flag+" ")
}

func approxEqual(a, b float64) bool {
	if math.IsInf(b, 0) || math.IsNaN(b) {
		return false
	}
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// shellInert reports whether s is made only of characters bash takes
// literally anywhere in a word.
func shellInert(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.:/,@%+=", c) >= 0) {
			return false
		}
	}
	return true
}

// errNotPlain is what shellWords returns for anything beyond words and
// quoting: a command separator, a redirection, an expansion, a glob.
var errNotPlain = errors.New("not a plain list of words")

// shellWords splits s as bash splits a simple command into words, and
// refuses (errNotPlain) anything that would make bash do more than that.
// It is deliberately strict: a glob character or a lone `$` is refused
// even where bash would keep it literal.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errNotPlain
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				d := s[i]
				if d == '"' {
					closed = true
					break
				}
				if d == '$' || d == '`' || d == 0 {
					return nil, errNotPlain
				}
				if d == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0 {
					i++
					d = s[i]
				} else if d == '\\' && i+1 < len(s) && s[i+1] == '\n' {
					return nil, errNotPlain
				}
				cur.WriteByte(d)
			}
			if !closed {
				return nil, errNotPlain
			}
		case c == '\\':
			if i+1 >= len(s) || s[i+1] == '\n' || s[i+1] == 0 {
				return nil, errNotPlain
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case strings.IndexByte("\n\x00;&|<>()`$*?[{}", c) >= 0:
			return nil, errNotPlain
		case (c == '#' || c == '~') && !inWord:
			return nil, errNotPlain
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
