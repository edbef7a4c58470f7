// Package eventscan reads, from a controller package's source, which event
// reasons it records, so that a test can check each against an upstream
// operator's table (the action KubeRay records for it, ...): a new event
// without an entry fails that test.
package eventscan

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientevents "k8s.io/client-go/tools/events"

	"github.com/gantry-dev/gantry/pkg/framework/events"
)

// Reasons parses the Go files (tests left out) of the package in dir and
// returns the constant reason of every event it records
// (recorder.Warning/Normal, a Log's Add, AddItem, Created, Updated), each
// with where. Constants are read from the package and from the api/ray/v1
// package at rayAPI (its rayv1.* names). A reason that is not a constant
// fails the test, but for a validation error's EventReason(), which the
// caller lists itself.
func Reasons(t testing.TB, dir, rayAPI string) map[string]string {
	t.Helper()
	return ReasonsWith(t, dir, rayAPI, Options{})
}

// Options widen the scan to a package's own ways of recording.
type Options struct {
	// Calls are calls that pass an event's reason on, by "<recv>.<method>"
	// (the last name before the dot: "podEvents.add", "r.warnNotOwned"),
	// each with the index of its reason argument.
	Calls map[string]int
	// Forwarders are the functions that pass on a reason they were given:
	// a reason there that is not a constant is read where they are called
	// (Calls) instead.
	Forwarders []string
}

// ReasonsWith is Reasons with o.
func ReasonsWith(t testing.TB, dir, rayAPI string, o Options) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	consts := map[string]string{}
	rayv1Consts := map[string]string{}
	files := parseDir(t, fset, dir)
	for _, f := range files {
		collectStringConsts(f, consts)
	}
	for _, f := range parseDir(t, fset, rayAPI) {
		collectStringConsts(f, rayv1Consts)
	}
	var resolve func(e ast.Expr) (string, bool)
	resolve = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.CallExpr: // string(x)
			if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" && len(e.Args) == 1 {
				return resolve(e.Args[0])
			}
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && x.Name == "rayv1" {
				v, ok := rayv1Consts[e.Sel.Name]
				return v, ok
			}
			if x, ok := e.X.(*ast.Ident); ok && x.Name == "events" {
				v, ok := map[string]string{"ReasonCreated": events.ReasonCreated, "ReasonUpdated": events.ReasonUpdated}[e.Sel.Name]
				return v, ok
			}
		case *ast.Ident:
			v, ok := consts[e.Name]
			return v, ok
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				v, err := strconv.Unquote(e.Value)
				return v, err == nil
			}
		}
		return "", false
	}
	out := map[string]string{}
	for _, f := range files {
		var inForwarder *ast.FuncDecl
		ast.Inspect(f, func(n ast.Node) bool {
			if fn, ok := n.(*ast.FuncDecl); ok {
				inForwarder = nil
				if slices.Contains(o.Forwarders, fn.Name.Name) {
					inForwarder = fn
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			var reason ast.Expr
			onLog := isEventsLog(sel.X)
			i, forwarded := o.Calls[lastName(sel.X)+"."+sel.Sel.Name]
			switch {
			case forwarded && len(call.Args) > i:
				reason = call.Args[i]
			case (sel.Sel.Name == "Warning" || sel.Sel.Name == "Normal") && isRecorder(sel.X) && len(call.Args) >= 2:
				reason = call.Args[1]
			case (sel.Sel.Name == "Add" || sel.Sel.Name == "AddItem") && onLog && len(call.Args) >= 1:
				reason = call.Args[0]
			case sel.Sel.Name == "Created" && onLog:
				reason = &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(events.ReasonCreated)}
			case sel.Sel.Name == "Updated" && onLog:
				reason = &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(events.ReasonUpdated)}
			default:
				return true
			}
			where := fset.Position(call.Pos()).String()
			v, ok := resolve(reason)
			if !ok && inForwarder != nil {
				return true // read where it is called (Calls)
			}
			if !ok {
				if c, isCall := reason.(*ast.CallExpr); isCall {
					if inner, ok := c.Args[0].(*ast.CallExpr); ok && len(c.Args) == 1 {
						if s, ok := inner.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "EventReason" {
							return true // a validation error's: validationReasons
						}
					}
				}
				t.Errorf("%s: the reason %s is not a constant this test can read", where, exprString(reason))
				return true
			}
			out[v] = where
			return true
		})
	}
	if len(out) == 0 {
		t.Fatal("no recorded reason found: the scan is broken")
	}
	return out
}

func parseDir(t testing.TB, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// collectStringConsts notes every constant declared with a string literal.
func collectStringConsts(f *ast.File, into map[string]string) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						into[name.Name] = v
					}
				}
			}
		}
	}
}

// isRecorder: x is r.recorder (or any field named recorder).
func isRecorder(x ast.Expr) bool {
	s, ok := x.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "recorder"
}

// isEventsLog: x is s.Events, the scope's events.Log.
func isEventsLog(x ast.Expr) bool {
	s, ok := x.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "Events"
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = exprString(a)
		}
		return exprString(e.Fun) + "(" + strings.Join(args, ", ") + ")"
	}
	return fmt.Sprintf("%T", e)
}

// lastName is the last name of x: "podEvents" for s.podEvents, "r" for r.
func lastName(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

// actionRecorder keeps the action of each event it is handed, by reason.
type actionRecorder struct{ actions map[string][]string }

func (f *actionRecorder) Eventf(_, _ runtime.Object, _, reason, action, _ string, _ ...any) {
	f.actions[reason] = append(f.actions[reason], action)
}

// CheckActions records, for each reason of want, a Warning and a Log's
// Normal event on regarding through the Recorder that newRecorder builds
// around its events.k8s.io recorder (the reconciler's own, built as the
// manager builds it), and fails t unless both carry want[reason].
func CheckActions[K ~string](t *testing.T, want map[K]string, regarding runtime.Object, newRecorder func(clientevents.EventRecorder) events.Recorder) {
	t.Helper()
	for reason, action := range want {
		t.Run(string(reason), func(t *testing.T) {
			f := &actionRecorder{actions: map[string][]string{}}
			r := newRecorder(f)
			r.Warning(regarding, string(reason), "failed")
			var log events.Log
			log.Add(string(reason), "done")
			log.Flush(r, regarding)
			if got := f.actions[string(reason)]; !slices.Equal(got, []string{action, action}) {
				t.Errorf("actions of %s = %q, want %q for the Warning and the Normal event", reason, got, action)
			}
		})
	}
}

// CheckCovered fails t for every reason recorded (Reasons) that want has
// no entry for, and every entry of want that is never recorded: a new
// event needs its action, and the table lists only what is recorded.
func CheckCovered[K ~string](t testing.TB, recorded map[string]string, want map[K]string) {
	t.Helper()
	for reason, where := range recorded {
		if _, ok := want[K(reason)]; !ok {
			t.Errorf("%s: reason %q has no entry in the table of actions", where, reason)
		}
	}
	for reason := range want {
		if _, ok := recorded[string(reason)]; !ok {
			t.Errorf("the table of actions lists %q, which the package never records", reason)
		}
	}
}
