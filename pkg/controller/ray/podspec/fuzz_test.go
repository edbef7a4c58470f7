package podspec

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// FuzzRayStartCommand: the `ray start` line for any rayStartParams, group
// resources and accelerator limits. No panic; params are not modified;
// every user flag is passed through as written (rayStartParams values are
// not shell-quoted, as in KubeRay: users quote JSON values themselves);
// and what the operator quotes itself, the --resources JSON it builds, is
// one shell word that decodes to the resources (those beyond float64 left
// out). With user flags made of
// characters the shell leaves alone, the whole line is plain words.
func FuzzRayStartCommand(f *testing.F) {
	for _, s := range raytesting.SampleClusters(f) {
		c, ok := raytesting.DecodeCluster(s)
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
