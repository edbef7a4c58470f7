package accounting

import (
	"errors"
	"strings"
	"testing"
)

// TestConfValue: what Slurm's parser reads back (comments end at an
// unescaped '#', every unescaped '\' is dropped, blanks need quotes) is
// the password itself. The real slurmdbd reads one with '#' and '\' in
// test/slurm (TestAccountingRecordsJobs).
func TestConfValue(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "plain", want: "plain"},
		{in: "p#ss", want: `p\#ss`},
		{in: `back\slash`, want: `back\\slash`},
		{in: `ends\`, want: `ends\\`},
		{in: "two words", want: `"two words"`},
		{in: "tab\there#", want: "\"tab\there\\#\""},
		{in: `"quoted"`, wantErr: true},
		{in: `mid"quote`, want: `mid"quote`},
		{in: `a "b"`, wantErr: true},
		{in: "line\nbreak", wantErr: true},
		{in: "cr\rhere", wantErr: true},
	}
	for _, tc := range tests {
		got, err := confValue(tc.in)
		if tc.wantErr {
			if !errors.Is(err, errStoragePassword) {
				t.Errorf("confValue(%q) = %q, %v; want errStoragePassword", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("confValue(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if back := slurmParse(got); back != tc.in {
			t.Errorf("Slurm would read %q back as %q", got, back)
		}
	}
}

// slurmParse reads a value the way Slurm's config parser does: the line
// ends at the first '#' after an even number of '\', then each '\' escapes
// the next character, then one pair of enclosing quotes is removed.
func slurmParse(v string) string {
	bs := 0
	for i := 0; i < len(v); i++ {
		if v[i] == '#' && bs%2 == 0 {
			v = v[:i]
			break
		}
		if v[i] == '\\' {
			bs++
		} else {
			bs = 0
		}
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' {
			i++
			if i == len(v) {
				break
			}
		}
		b.WriteByte(v[i])
	}
	out := b.String()
	if len(out) >= 2 && out[0] == '"' && out[len(out)-1] == '"' {
		out = out[1 : len(out)-1]
	}
	return out
}
