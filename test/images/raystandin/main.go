package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
)

// standinVersion is what `ray --version` and /api/version report, so that
// nobody mistakes the stand-in for a Ray release.
const standinVersion = standin.Version

// logPrefix starts every line the stand-in prints.
const logPrefix = "ray-standin: "

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command line: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	out, errl := newLogger(stdout), newLogger(stderr)
	if len(args) == 0 {
		errl.printf("usage: ray <start|stop|health-check|job|version> [flags] (stand-in, not Ray)")
		return 2
	}
	switch args[0] {
	case "--version", "version":
		// The one line without the prefix: its format is the CLI's.
		fmt.Fprintln(stdout, "ray, version "+standinVersion)
		return 0
	case "-h", "--help", "help":
		out.printf("this is a Ray stand-in for tests, not Ray; it implements start, stop, health-check, job and version")
		return 0
	case "start":
		return runStart(args[1:], out, errl)
	case "stop":
		return runStop(args[1:], out, errl)
	case "health-check":
		return runHealthCheck(args[1:], out, errl)
	case "job":
		return runJob(args[1:], stdout, out, errl)
	default:
		errl.printf("ray stand-in: %s is not supported", args[0])
		return 2
	}
}

// logger prefixes every line it writes with logPrefix.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func newLogger(w io.Writer) *logger { return &logger{w: w} }

func (l *logger) printf(format string, args ...any) {
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(msg, "\n") {
		fmt.Fprint(l.w, logPrefix+line+"\n")
	}
}
