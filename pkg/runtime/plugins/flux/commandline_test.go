package flux

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommandLine(t *testing.T) {
	cases := map[string]struct {
		words []string
		want  string
	}{
		"nothing":                      {words: nil, want: ""},
		"plain words as Trainer":       {words: []string{"lmp", "-v", "x", "4", "-in", "in.reaxc.hns", "-nocite"}, want: "lmp -v x 4 -in in.reaxc.hns -nocite"},
		"= in arguments is plain":      {words: []string{"python", "train.py", "--lr=0.1", "model.name=llama"}, want: "python train.py --lr=0.1 model.name=llama"},
		"= in the command is quoted":   {words: []string{"a=b", "c"}, want: "'a=b' c"},
		"a space":                      {words: []string{"echo", "a b"}, want: "echo 'a b'"},
		"quotes":                       {words: []string{"python", "-c", "print('hello world')", `say "hi"`}, want: `python -c "print('hello world')" 'say "hi"'`},
		"empty word":                   {words: []string{"echo", ""}, want: "echo ''"},
		"globs and expansions":         {words: []string{"ls", "*.py", "$HOME", "`id`", "{a,b}"}, want: "ls '*.py' '$HOME' '`id`' '{a,b}'"},
		"tilde after = is quoted":      {words: []string{"run", "--dir=~/x", "~"}, want: "run '--dir=~/x' '~'"},
		"= with other specials quoted": {words: []string{"run", "--x=a b"}, want: "run '--x=a b'"},
		"newline":                      {words: []string{"printf", "a\nb"}, want: `printf $'a\nb'`},
	}
	for name, tc := range cases {
		got, err := CommandLine(tc.words)
		if err != nil || got != tc.want {
			t.Errorf("%s: CommandLine = %q, %v; want %q", name, got, err, tc.want)
		}
	}
	if _, err := CommandLine([]string{"a\x00b"}); err == nil {
		t.Error("a NUL byte: want an error")
	}
}

// TestCommandLineRoundTrip: bash, re-splitting the line as the entrypoint
// does, gets every word back.
func TestCommandLineRoundTrip(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: ", err)
	}
	words := []string{"python", "-c", "print('hello world')", `say "hi"`, "", "a b", "--lr=0.1", "k=v w", "*", "$HOME",
		"`id`", "~", "--dir=~/x", "{a,b}", "a\nb", "tab\there", "back\\slash", "!", "#not a comment", "é", "-n", "--", ";", "&&", "x>y"}
	line, err := CommandLine(words)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bash, "-c", `eval "set -- $1"; printf '%s\0' "$@"`, "bash", line).Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if diff := cmp.Diff(words, got); diff != "" {
		t.Errorf("words after bash (-want +got):\n%s\nline: %s", diff, line)
	}
}
