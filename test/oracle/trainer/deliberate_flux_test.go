package trainer_test

import (
	"bytes"
	"crypto/ecdh"
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/pelletier/go-toml/v2"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The Flux policy's deliberate differences (docs/trainjob.md lists them):
//
//  1. The scripts are Gantry's own. Only the facts in them are compared:
//     the broker configuration (Trainer's is a heredoc in its init.sh,
//     Gantry's its own ConfigMap key, both parsed as TOML), the hostlist,
//     the lead broker's hostname, the `flux R encode` resources and the
//     `flux run` flags (normalizeFluxConfigMap).
//  2. The CURVE key is random and the Secret created once and immutable:
//     Trainer derives the key from the TrainJob's UID, which anyone who can
//     read the TrainJob can repeat. The certificate's format is compared
//     instead of its bytes (normalizeCurveSecret).
//  3. The wrapped command keeps its words: Trainer joins command and args
//     with spaces, Gantry quotes the words that need it
//     (normalizeFluxCommand).
//  4. A TrainJob without spec.trainer or spec.trainer.numNodes: Trainer's
//     plugin panics, Gantry builds it (deliberateGantryBuild).

const (
	fluxConfigMapSuffix = "-flux-entrypoint"
	fluxCurveSuffix     = "-flux-curve"
	fluxEntrypointPath  = "/etc/flux-config/entrypoint.sh"
)

// deliberateGantryBuild reports whether Gantry's build of an input Trainer
// refuses is a listed difference, and why. One is: a Flux TrainJob
// without spec.trainer or spec.trainer.numNodes, on which Trainer's Flux
// plugin panics (it dereferences both; its controller crashes on such a
// job), and which Gantry builds with the effective node count: the
// TrainJob's numNodes, else the runtime's mlPolicy.numNodes. Gantry must
// have built the Flux objects.
func deliberateGantryBuild(in input, upErr error, got map[string]map[string]any) (string, bool) {
	if path(in.runtime.doc, "spec", "mlPolicy", "flux") == nil ||
		!strings.HasPrefix(upErr.Error(), "trainer panicked in its Flux plugin: runtime error: invalid memory address or nil pointer dereference") {
		return "", false
	}
	if tr, ok := in.job["trainer"].(map[string]any); ok && tr["numNodes"] != nil {
		return "", false
	}
	for _, key := range []string{"JobSet/job", "ConfigMap/job" + fluxConfigMapSuffix, "Secret/job" + fluxCurveSuffix} {
		if got[key] == nil {
			return "", false
		}
	}
	return "Trainer's Flux plugin panics on a TrainJob without spec.trainer or spec.trainer.numNodes; " +
		"Gantry builds it, with the runtime's mlPolicy.numNodes", true
}

// normalizeFluxConfigMap replaces the data of both ConfigMaps
// <job>-flux-entrypoint with the facts their scripts hold. Each side's
// scripts are read the way they are written: Trainer's from its templates'
// lines, Gantry's from the settings its scripts start with. A fact that
// cannot be read is an error string, which the comparison shows.
func normalizeFluxConfigMap(want, got map[string]any) {
	want["data"] = trainerFluxFacts(want["data"])
	got["data"] = gantryFluxFacts(got["data"])
}

// fluxFacts is what both ConfigMaps must agree on.
type fluxFacts struct {
	keys      []string
	broker    map[string]any
	hostlist  string
	leadHost  string
	resources string // the `flux R encode` options after --hosts
	runFlags  string
	errs      []string
}

func (f *fluxFacts) fail(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fluxFacts) asMap() map[string]any {
	return map[string]any{
		"data keys":      strings.Join(f.keys, ","),
		"broker.toml":    f.broker,
		"hostlist":       f.hostlist,
		"lead host":      f.leadHost,
		"flux R encode":  f.resources,
		"flux run flags": f.runFlags,
		"errors reading": strings.Join(f.errs, "; "),
	}
}

// dataKeys lists data's keys, sorted, and the string values.
func dataKeys(data any) ([]string, map[string]string) {
	m, _ := data.(map[string]any)
	values := map[string]string{}
	var keys []string
	for k, v := range m {
		keys = append(keys, k)
		values[k], _ = v.(string)
	}
	sort.Strings(keys)
	return keys, values
}

var (
	trainerBrokerHeredoc = regexp.MustCompile(`(?s)cat <<EOT >> \$\{installRoot\}/etc/flux/config/broker\.toml\n(.*?)\nEOT\n`)
	trainerHosts         = regexp.MustCompile(`(?m)^hosts="([^"]*)"$`)
	trainerMainHost      = regexp.MustCompile(`(?m)^mainHost="([^"]*)"$`)
	trainerREncode       = regexp.MustCompile(`(?m)^flux R encode --hosts=\$\{hosts\} (.*) > /tmp/R$`)
	trainerFlags         = regexp.MustCompile(`(?m)^\s*flags="([^"]*)"$`)

	gantryHostlist = regexp.MustCompile(`(?m)^hostlist=(.*)$`)
	gantryLeadHost = regexp.MustCompile(`(?m)^lead_host=(.*)$`)
	gantryRes      = regexp.MustCompile(`(?m)^resources=\((.*)\)$`)
	gantryFlags    = regexp.MustCompile(`(?m)^run_flags=\((.*)\)$`)
)

// trainerFluxFacts reads Trainer v2.3's init.sh (hostlist, broker.toml
// heredoc) and entrypoint.sh (mainHost, flux R encode, flags).
func trainerFluxFacts(data any) map[string]any {
	var f fluxFacts
	keys, values := dataKeys(data)
	f.keys = keys
	initScript, entrypoint := values["init.sh"], values["entrypoint.sh"]
	if m := trainerBrokerHeredoc.FindStringSubmatch(initScript); m != nil {
		f.broker = parseTOML(&f, m[1])
	} else {
		f.fail("no broker.toml heredoc in init.sh")
	}
	f.hostlist = submatch(&f, trainerHosts, initScript, "init.sh hosts")
	f.leadHost = submatch(&f, trainerMainHost, entrypoint, "entrypoint.sh mainHost")
	f.resources = strings.Join(strings.Fields(submatch(&f, trainerREncode, entrypoint, "entrypoint.sh flux R encode")), " ")
	f.runFlags = strings.Join(strings.Fields(submatch(&f, trainerFlags, entrypoint, "entrypoint.sh flags")), " ")
	return f.asMap()
}

// gantryFluxFacts reads Gantry's broker.toml key and the settings at the
// top of its scripts (shell words, unquoted by the shell's rules).
func gantryFluxFacts(data any) map[string]any {
	var f fluxFacts
	keys, values := dataKeys(data)
	f.keys = keys
	if b, ok := values["broker.toml"]; ok {
		f.broker = parseTOML(&f, b)
	} else {
		f.fail("no broker.toml key")
	}
	initScript, entrypoint := values["init.sh"], values["entrypoint.sh"]
	f.hostlist = strings.Join(shellWords(&f, submatch(&f, gantryHostlist, initScript, "init.sh hostlist")), " ")
	f.leadHost = strings.Join(shellWords(&f, submatch(&f, gantryLeadHost, entrypoint, "entrypoint.sh lead_host")), " ")
	f.resources = strings.Join(shellWords(&f, submatch(&f, gantryRes, entrypoint, "entrypoint.sh resources")), " ")
	f.runFlags = strings.Join(shellWords(&f, submatch(&f, gantryFlags, entrypoint, "entrypoint.sh run_flags")), " ")
	// Gantry's ConfigMap has broker.toml as a key of its own; the scripts
	// must also be Gantry's (bash, the settings line in place).
	for _, k := range []string{"init.sh", "entrypoint.sh"} {
		if !strings.HasPrefix(values[k], "#!/bin/bash\n") {
			f.fail("%s does not start with #!/bin/bash", k)
		}
	}
	f.keys = without(keys, "broker.toml")
	return f.asMap()
}

func submatch(f *fluxFacts, re *regexp.Regexp, text, what string) string {
	m := re.FindAllStringSubmatch(text, -1)
	if len(m) != 1 {
		f.fail("%s: %d matches of %s", what, len(m), re)
		return ""
	}
	return m[0][1]
}

func parseTOML(f *fluxFacts, text string) map[string]any {
	var out map[string]any
	if err := toml.Unmarshal([]byte(text), &out); err != nil {
		f.fail("broker.toml is not TOML: %v", err)
	}
	return out
}

// shellWords splits text into words as bash would for `set -- text`.
func shellWords(f *fluxFacts, text string) []string {
	ws, err := parseWords(text)
	if err != nil {
		f.fail("%q: %v", text, err)
	}
	var out []string
	for _, w := range ws {
		out = append(out, w.value)
	}
	return out
}

// shellWord is one word of a command line: as written, and its value.
type shellWord struct {
	source, value string
}

// parseWords parses line as the arguments of a command.
func parseWords(line string) ([]shellWord, error) {
	const prefix = "set -- "
	src := prefix + line
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, err
	}
	if len(file.Stmts) != 1 {
		return nil, fmt.Errorf("%d statements", len(file.Stmts))
	}
	call, ok := file.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) < 2 {
		return nil, fmt.Errorf("not a simple command")
	}
	var out []shellWord
	for _, w := range call.Args[2:] {
		v, err := expand.Literal(nil, w)
		if err != nil {
			return nil, err
		}
		out = append(out, shellWord{source: src[w.Pos().Offset():w.End().Offset()], value: v})
	}
	return out, nil
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// normalizeCurveSecret replaces curve.cert in both Secrets <job>-flux-curve
// with a description of its format (describeCurveCert), and drops
// Gantry's immutable: true, which Trainer does not set (Gantry creates the
// Secret once and never rewrites it; Trainer applies the same derived key
// on every reconcile).
func normalizeCurveSecret(want, got map[string]any) {
	for _, s := range []map[string]any{want, got} {
		data, _ := s["data"].(map[string]any)
		if data == nil {
			continue
		}
		v, _ := data["curve.cert"].(string)
		data["curve.cert"] = describeCurveCert(v)
	}
	if _, set := want["immutable"]; !set && got["immutable"] == true {
		delete(got, "immutable")
	}
}

// describeCurveCert is what is compared of a ZeroMQ CURVE certificate: its
// lines other than comments and blanks, with each key replaced by its
// encoding (Z85, its length, the decoded length), and whether the public
// key is the secret key's.
func describeCurveCert(b64 string) string {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "not base64: " + err.Error()
	}
	keyLine := regexp.MustCompile(`^(\s+)(public-key|secret-key) = "([^"]*)"$`)
	var lines []string
	keys := map[string][]byte{}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if m := keyLine.FindStringSubmatch(l); m != nil {
			decoded, err := decodeZ85(m[3])
			if err != nil {
				lines = append(lines, fmt.Sprintf("%s%s = not Z85 (%d characters): %v", m[1], m[2], len(m[3]), err))
				continue
			}
			keys[m[2]] = decoded
			lines = append(lines, fmt.Sprintf("%s%s = Z85, %d characters, %d bytes", m[1], m[2], len(m[3]), len(decoded)))
			continue
		}
		lines = append(lines, l)
	}
	match := "the public key is not the secret key's"
	if priv, err := ecdh.X25519().NewPrivateKey(keys["secret-key"]); err == nil && bytes.Equal(priv.PublicKey().Bytes(), keys["public-key"]) {
		match = "the public key is the secret key's (X25519)"
	}
	return strings.Join(append(lines, match), "\n")
}

// decodeZ85 decodes ZeroMQ's Z85 (RFC 32).
func decodeZ85(s string) ([]byte, error) {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("length %d is not a multiple of 5", len(s))
	}
	var out []byte
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for _, c := range []byte(s[i : i+5]) {
			d := strings.IndexByte(alphabet, c)
			if d < 0 {
				return nil, fmt.Errorf("%q is not a Z85 character", c)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, fmt.Errorf("chunk %q overflows", s[i:i+5])
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}

// normalizeFluxCommand accepts one difference in the trainer's command,
// [/bin/bash, /etc/flux-config/entrypoint.sh, LINE]: Trainer's LINE is the
// command's and args' words joined with spaces (and trimmed), Gantry's
// the same words each quoted where bash needs it. Where Gantry's LINE
// splits back into exactly the input's words, and every word it writes
// differently from the word itself needs quoting, Trainer's LINE is put in
// its place. Where no word needs quoting, the lines must be equal as they
// are.
func normalizeFluxCommand(in input, want, got map[string]any) {
	words := fluxInputWords(in)
	wc := trainerNodeContainer(want)
	gc := trainerNodeContainer(got)
	if wc == nil || gc == nil {
		return
	}
	wcmd, _ := wc["command"].([]any)
	gcmd, _ := gc["command"].([]any)
	if len(wcmd) != 3 || len(gcmd) != 3 || wcmd[1] != fluxEntrypointPath || gcmd[1] != fluxEntrypointPath {
		return
	}
	wline, _ := wcmd[2].(string)
	gline, _ := gcmd[2].(string)
	if wline == gline || wline != strings.TrimSpace(strings.Join(words, " ")) {
		return
	}
	parsed, err := parseWords(gline)
	if err != nil || len(parsed) != len(words) {
		return
	}
	for i, w := range parsed {
		if w.value != words[i] {
			return
		}
		if w.source != words[i] && !needsQuoting(words[i], i == 0) {
			return
		}
	}
	gcmd[2] = wline
}

// fluxInputWords is the command line Trainer wraps: spec.trainer.command,
// else the runtime's node container command, then spec.trainer.args.
func fluxInputWords(in input) []string {
	var words []string
	if c := trainerNodeContainer(map[string]any{"spec": path(in.runtime.doc, "spec", "template", "spec")}); c != nil {
		for _, w := range asList(c["command"]) {
			words = append(words, fmt.Sprint(w))
		}
	}
	tr, _ := in.job["trainer"].(map[string]any)
	if cmd, ok := tr["command"]; ok && cmd != nil {
		words = nil
		for _, w := range asList(cmd) {
			words = append(words, fmt.Sprint(w))
		}
	}
	for _, w := range asList(tr["args"]) {
		words = append(words, fmt.Sprint(w))
	}
	return words
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// trainerNodeContainer is container "node" of the replicated job labelled
// as the trainer step, in a JobSet (or a spec holding replicatedJobs).
func trainerNodeContainer(jobSet map[string]any) map[string]any {
	for _, rj := range asList(path(jobSet, "spec", "replicatedJobs")) {
		m, _ := rj.(map[string]any)
		if path(m, "template", "metadata", "labels", "trainer.kubeflow.org/trainjob-ancestor-step") != "trainer" {
			continue
		}
		for _, c := range asList(path(m, "template", "spec", "template", "spec", "containers")) {
			if cm, _ := c.(map[string]any); cm["name"] == "node" {
				return cm
			}
		}
	}
	return nil
}

// needsQuoting: a word bash would not read back as itself when written
// as it is: empty, or with a character other than letters, digits and
// _@%+,./:- (and "=", except in the command's name, where a=b is an
// assignment).
func needsQuoting(w string, commandName bool) bool {
	if w == "" {
		return true
	}
	for _, r := range w {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), strings.ContainsRune("_@%+,./:-", r):
		case r == '=' && !commandName:
		default:
			return true
		}
	}
	return false
}
