package main

import (
	"os"
	"os/exec"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// TestGCDefault runs this test binary again as a fresh process (GOGC is
// read once, at start-up) and reads the collector's target there after
// setGCDefault: 50 without GOGC, GOGC's value with it.
func TestGCDefault(t *testing.T) {
	if os.Getenv("GANTRY_GC_CHILD") == "1" {
		setGCDefault()
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		os.Stdout.WriteString("gogc=" + strconv.FormatUint(s[0].Value.Uint64(), 10) + "\n")
		return
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "gogc=50"},
		{[]string{"GOGC=120"}, "gogc=120"},
		{[]string{"GOGC=100"}, "gogc=100"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGCDefault$")
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "GOGC=") {
				env = append(env, e)
			}
		}
		cmd.Env = append(append(env, "GANTRY_GC_CHILD=1"), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.env, err, out)
		}
		if !strings.Contains(string(out), tc.want+"\n") {
			t.Errorf("env %v: the child says %q; want %s", tc.env, out, tc.want)
		}
	}
}
