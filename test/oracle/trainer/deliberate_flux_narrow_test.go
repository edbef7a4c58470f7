package trainer_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFluxNormalizationIsNarrow: the Flux normalizations remove only the
// deliberate differences. Gantry's objects for the quoting input, normalized,
// equal Trainer's; each edit of a fact in them must still show as a
// difference.
func TestFluxNormalizationIsNarrow(t *testing.T) {
	crds := loadSchemas(t)
	var in *input
	for _, c := range corpus(t) {
		if c.runtime.origin == "trainer+flux 2 procs and gpus" && strings.HasSuffix(c.name, "/command that needs quoting") {
			in = &c
			break
		}
	}
	if in == nil {
		t.Fatal("the Flux quoting input is not in the corpus")
	}
	want, err := buildUpstream(t.Context(), crds["trainer"], *in)
	if err != nil {
		t.Fatal(err)
	}
	base, err := buildGantry(t.Context(), crds["gantry"], *in)
	if err != nil {
		t.Fatal(err)
	}
	const (
		cm     = "ConfigMap/job" + fluxConfigMapSuffix
		secret = "Secret/job" + fluxCurveSuffix
		js     = "JobSet/job"
	)
	data := func(objs map[string]map[string]any, key string) map[string]any {
		return objs[key]["data"].(map[string]any)
	}
	replaceIn := func(key, field, old, repl string) func(map[string]map[string]any) {
		return func(g map[string]map[string]any) {
			d := data(g, key)
			s := d[field].(string)
			if !strings.Contains(s, old) {
				t.Fatalf("%s %s has no %q", key, field, old)
			}
			d[field] = strings.Replace(s, old, repl, 1)
		}
	}
	setLine := func(line string) func(map[string]map[string]any) {
		return func(g map[string]map[string]any) {
			trainerNodeContainer(g[js])["command"].([]any)[2] = line
		}
	}
	cases := map[string]func(map[string]map[string]any){
		"nothing":                        nil,
		"hostlist":                       replaceIn(cm, "init.sh", "hostlist='job-node-0-[0-1]'", "hostlist='job-node-0-[0-2]'"),
		"lead host":                      replaceIn(cm, "entrypoint.sh", "lead_host=job-node-0-0", "lead_host=job-node-0-1"),
		"resources":                      replaceIn(cm, "entrypoint.sh", "--gpu=0-3", "--gpu=0-1"),
		"run flags":                      replaceIn(cm, "entrypoint.sh", "-g 4", "-g 2"),
		"queue policy":                   replaceIn(cm, "broker.toml", "'fcfs'", "'easy'"),
		"broker bind":                    replaceIn(cm, "broker.toml", "tcp://eth0:%p", "tcp://eth1:%p"),
		"an extra ConfigMap key":         func(g map[string]map[string]any) { data(g, cm)["extra"] = "x" },
		"a broken script":                replaceIn(cm, "init.sh", "#!/bin/bash\n", "#!/bin/sh\n"),
		"a word split apart":             setLine(`python -c "print('hello world')" --name a b --lr=0.1 ''`),
		"a word quoted without need":     setLine(`'python' -c "print('hello world')" --name 'a b' --lr=0.1 ''`),
		"a lost empty word":              setLine(`python -c "print('hello world')" --name 'a b' --lr=0.1`),
		"the entrypoint path":            func(g map[string]map[string]any) { trainerNodeContainer(g[js])["command"].([]any)[1] = "/x.sh" },
		"a mismatched key pair":          func(g map[string]map[string]any) { swapCurveKey(t, data(g, secret)) },
		"the certificate's name":         func(g map[string]map[string]any) { editCert(t, data(g, secret), `name = "job"`, `name = "other"`) },
		"a Secret that is not immutable": func(g map[string]map[string]any) { g[secret]["immutable"] = false },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			w, g := deepCopyObjects(t, want), deepCopyObjects(t, base)
			if edit != nil {
				edit(g)
			}
			normalize(*in, w, g)
			if facts := data(g, cm)["errors reading"]; edit == nil && facts != "" {
				t.Fatalf("Gantry's facts not read: %v", facts)
			}
			if facts := data(w, cm)["errors reading"]; facts != "" {
				t.Fatalf("Trainer's facts not read: %v", facts)
			}
			diff := cmp.Diff(w, g)
			if edit == nil && diff != "" {
				t.Fatalf("unedited objects differ:\n%s", diff)
			}
			if edit != nil && diff == "" {
				t.Fatal("the edit does not show after normalize")
			}
		})
	}
}

func deepCopyObjects(t *testing.T, in map[string]map[string]any) map[string]map[string]any {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func editCert(t *testing.T, data map[string]any, old, repl string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(data["curve.cert"].(string))
	if err != nil || !strings.Contains(string(raw), old) {
		t.Fatalf("curve.cert has no %q (%v)", old, err)
	}
	data["curve.cert"] = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(raw), old, repl, 1)))
}

// swapCurveKey replaces the public key with another valid Z85 key.
func swapCurveKey(t *testing.T, data map[string]any) {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(data["curve.cert"].(string))
	i := strings.Index(string(raw), `public-key = "`)
	if i < 0 {
		t.Fatal("no public key")
	}
	i += len(`public-key = "`)
	b := []byte(raw)
	// Another character of the alphabet in the first chunk keeps it Z85.
	if b[i] == '0' {
		b[i] = '1'
	} else {
		b[i] = '0'
	}
	data["curve.cert"] = base64.StdEncoding.EncodeToString(b)
}

// TestDeliberateGantryBuildIsNarrow: Gantry building what Trainer refuses
// is accepted only for Trainer's panic in its Flux plugin, on a Flux
// TrainJob without numNodes, with Gantry's Flux objects built.
func TestDeliberateGantryBuildIsNarrow(t *testing.T) {
	flux := runtimeFile{doc: map[string]any{"spec": map[string]any{"mlPolicy": map[string]any{"flux": map[string]any{}}}}}
	torch := runtimeFile{doc: map[string]any{"spec": map[string]any{"mlPolicy": map[string]any{"torch": map[string]any{}}}}}
	panicked := errors.New("trainer panicked in its Flux plugin: runtime error: invalid memory address or nil pointer dereference")
	built := map[string]map[string]any{"JobSet/job": {}, "ConfigMap/job-flux-entrypoint": {}, "Secret/job-flux-curve": {}}
	cases := map[string]struct {
		in   input
		err  error
		got  map[string]map[string]any
		want bool
	}{
		"no spec.trainer":        {in: input{runtime: flux, job: map[string]any{}}, err: panicked, got: built, want: true},
		"no numNodes":            {in: input{runtime: flux, job: map[string]any{"trainer": map[string]any{"image": "x"}}}, err: panicked, got: built, want: true},
		"numNodes set":           {in: input{runtime: flux, job: map[string]any{"trainer": map[string]any{"numNodes": 2}}}, err: panicked, got: built},
		"not a Flux runtime":     {in: input{runtime: torch, job: map[string]any{}}, err: panicked, got: built},
		"a panic elsewhere":      {in: input{runtime: flux, job: map[string]any{}}, err: errors.New("trainer panicked: runtime error: invalid memory address or nil pointer dereference"), got: built},
		"a refusal":              {in: input{runtime: flux, job: map[string]any{}}, err: errors.New("refused: spec.trainer: Invalid value"), got: built},
		"Gantry built no Secret": {in: input{runtime: flux, job: map[string]any{}}, err: panicked, got: map[string]map[string]any{"JobSet/job": {}, "ConfigMap/job-flux-entrypoint": {}}},
	}
	for name, tc := range cases {
		if _, ok := deliberateGantryBuild(tc.in, tc.err, tc.got); ok != tc.want {
			t.Errorf("%s: accepted = %v, want %v", name, ok, tc.want)
		}
	}
}
