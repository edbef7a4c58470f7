// Command pause is the process of a pod sandbox (the image
// gantry.local/pause:3.10 that hack/test-images.sh builds): it holds the
// pod's namespaces by doing nothing until it is told to stop. It sleeps
// forever, exits 0 on SIGTERM or SIGINT and, as PID 1 of a pod that shares
// its process namespace, reaps the zombie children orphaned to it.
//
// Build it static:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags=-s -o pause ./test/images/pause
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: pause (takes no arguments; stops on SIGTERM or SIGINT)")
		os.Exit(2)
	}
	os.Exit(pause(nil))
}

// pause waits for signals: on SIGCHLD it reaps every exited child, on
// SIGTERM or SIGINT it returns 0. ready, if not nil, is closed once the
// signal handlers are in place.
func pause(ready chan<- struct{}) int {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	// Children that exited before the handler was in place sent their
	// SIGCHLD to no one.
	reap()
	if ready != nil {
		close(ready)
	}
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		return 0
	}
	return 0
}

// reap waits for exited children until none is left. Several exits can
// arrive as one SIGCHLD, so it loops rather than waiting once.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 { // ECHILD: no children; 0: none exited yet
			return
		}
	}
}
