package main

import (
	"fmt"
	"strconv"
	"strings"
)

// flagSpec describes a subcommand's flags in Ray's style: --name=value,
// --name value, and bare --name switches. Flags the stand-in does not know
// are accepted and recorded, never an error: Gantry and users pass many
// `ray start` flags that only matter to real Ray.
type flagSpec struct {
	// values are flags that take a value.
	values map[string]bool
	// bools are on/off switches; --name=false is accepted too.
	bools map[string]bool
	// aliases map short names (without dashes) to long ones.
	aliases map[string]string
	// unknownTakesValue lets an unknown bare --flag take the next argument
	// as its value when that does not start with "-". Right for `ray
	// start`, which has no positional arguments; wrong for commands with a
	// positional job ID.
	unknownTakesValue bool
	// stopAtPositional makes the first positional argument and everything
	// after it positional (`ray job submit python x.py --arg`).
	stopAtPositional bool
}

type parsedFlags struct {
	values     map[string]string
	bools      map[string]bool
	unknown    []string
	positional []string
	// dashDash is set when "--" was given; afterDashDash is what followed.
	dashDash      bool
	afterDashDash []string
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func parseFlags(args []string, spec flagSpec) (*parsedFlags, error) {
	p := &parsedFlags{values: map[string]string{}, bools: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			p.dashDash = true
			p.afterDashDash = args[i+1:]
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			if spec.stopAtPositional {
				p.positional = append(p.positional, args[i:]...)
				break
			}
			p.positional = append(p.positional, arg)
			continue
		}
		name := strings.TrimLeft(arg, "-")
		value, hasValue := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = k, v, true
		}
		if long, ok := spec.aliases[name]; ok {
			name = long
		}
		switch {
		case spec.values[name]:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag --%s needs a value", name)
				}
				i++
				value = args[i]
			}
			p.values[name] = value
		case spec.bools[name]:
			on := true
			if hasValue {
				b, err := strconv.ParseBool(value)
				if err != nil {
					return nil, fmt.Errorf("flag --%s takes no value or true/false, got %q", name, value)
				}
				on = b
			}
			p.bools[name] = on
		default:
			shown := arg
			if !hasValue && spec.unknownTakesValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				value, hasValue = args[i], true
				shown += " " + value
			}
			p.unknown = append(p.unknown, shown)
			if hasValue {
				p.values[name] = value
			} else {
				p.bools[name] = true
			}
		}
	}
	return p, nil
}
