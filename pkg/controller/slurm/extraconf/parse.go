package extraconf

import (
	"fmt"
	"regexp"
	"strings"
)

// Line is one logical line of a slurm.conf-style file, read as Slurm's
// parser (src/common/parse_config.c, s_p_parse_file) reads it.
type Line struct {
	// First and Last are the physical lines it spans, 0-based.
	First, Last int
	// Text is what the parser matches: comments cut, continued lines
	// joined, backslash escapes removed.
	Text string
	// Pairs are its key=value pairs as "key=value", values unquoted. A
	// simple key has one; a line key (NodeName=, PartitionName=, ...)
	// also those its handler reads from the rest of the line.
	Pairs []string
	// LineKey: the first key is one whose handler reads the rest of the
	// line as its own pairs.
	LineKey bool
	// Include: an "Include <file>" line.
	Include bool
	// Err says why the daemon refuses the line; nil when it parses.
	Err error
}

// lineKeys are the slurm.conf keys whose handler parses the rest of the
// line as its own key=value pairs (S_P_LINE and S_P_EXPLINE in Slurm's
// src/common/read_config.c); every other key stands alone on its line.
var lineKeys = map[string]bool{
	"nodename": true, "partitionname": true, "nodeset": true, "downnodes": true, "frontendname": true,
}

// keyValue is parse_config.c's keyvalue_pattern; POSIX regexec matches
// leftmost-longest. The operator (+=, -=, *=, /=) does not change what a
// string key is set to.
var keyValue = func() *regexp.Regexp {
	re := regexp.MustCompile(`^[[:space:]]*([[:alnum:]_.]+)[[:space:]]*([-*+/]?)=[[:space:]]*(("([^"]*)")|([^[:space:]]+))([[:space:]]|$)`)
	re.Longest()
	return re
}()

// Parse reads conf as s_p_parse_file does. Per physical line: text after
// a '#' preceded by an even run of backslashes is a comment; an odd run of
// backslashes at the end (trailing white space aside) joins the next
// line. Then every backslash escapes the character after it. Each logical
// line is then an Include, one key=value, or a line key with its pairs,
// with nothing but white space left over.
func Parse(conf string) []Line {
	physical := strings.SplitAfter(conf, "\n")
	if physical[len(physical)-1] == "" {
		physical = physical[:len(physical)-1]
	}
	var lines []Line
	var buf strings.Builder
	start := -1
	for i, p := range physical {
		if j := strings.IndexByte(p, 0); j >= 0 {
			p = p[:j] // fgets reads past a NUL, strlen does not
		}
		p = stripComment(p)
		if start < 0 {
			start = i
		}
		if cut, continued := stripContinuation(p); continued {
			buf.WriteString(cut)
			continue
		}
		buf.WriteString(p)
		lines = append(lines, parseLogical(start, i, stripEscapes(buf.String())))
		buf.Reset()
		start = -1
	}
	if start >= 0 {
		lines = append(lines, parseLogical(start, len(physical)-1, stripEscapes(buf.String())))
	}
	return lines
}

// ContinuesLine reports whether slurm.conf text ending with s joins the
// physical line after it: s ends in an odd run of backslashes, trailing
// white space aside. As for Slurm (fgets, then strlen), a NUL ends the
// line there, newline included.
func ContinuesLine(s string) bool {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	_, continued := stripContinuation(s)
	return continued
}

func parseLogical(first, last int, text string) Line {
	l := Line{First: first, Last: last, Text: text}
	if allSpace(text) {
		return l
	}
	const include = "include"
	if len(text) > len(include) && strings.EqualFold(text[:len(include)], include) && isSpace(text[len(include)]) {
		l.Include = true
		return l
	}
	key, value, rest, ok := matchPair(text)
	if !ok {
		l.Err = fmt.Errorf("no key=value in %q", text)
		return l
	}
	l.Pairs = append(l.Pairs, key+"="+value)
	if lineKeys[strings.ToLower(key)] {
		l.LineKey = true
		for {
			k, v, r, ok := matchPair(rest)
			if !ok {
				break
			}
			l.Pairs = append(l.Pairs, k+"="+v)
			rest = r
		}
	}
	if !allSpace(rest) {
		l.Err = fmt.Errorf("%q after %s", rest, key)
	}
	return l
}

func matchPair(text string) (key, value, rest string, ok bool) {
	loc := keyValue.FindStringSubmatchIndex(text)
	if loc == nil {
		return "", "", text, false
	}
	key = text[loc[2]:loc[3]]
	switch {
	case loc[10] >= 0:
		value = text[loc[10]:loc[11]]
	case loc[12] >= 0:
		value = text[loc[12]:loc[13]]
	}
	return key, value, text[loc[7]:], true
}

// stripComment is parse_config.c's _strip_comments.
func stripComment(line string) string {
	backslashes := 0
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '#' && backslashes%2 == 0:
			return line[:i]
		case line[i] == '\\':
			backslashes++
		default:
			backslashes = 0
		}
	}
	return line
}

// stripContinuation is parse_config.c's _strip_continuation: the line
// without its last backslash (and what follows it) when it continues.
func stripContinuation(line string) (string, bool) {
	backslashes, i := 0, len(line)-1
	for ; i >= 0; i-- {
		if line[i] == '\\' {
			backslashes++
		} else if isSpace(line[i]) && backslashes == 0 {
			continue
		} else {
			break
		}
	}
	if backslashes%2 == 1 {
		return line[:i+backslashes], true
	}
	return line, false
}

// stripEscapes is parse_config.c's _strip_escapes.
func stripEscapes(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i++; i >= len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

func allSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isSpace(s[i]) {
			return false
		}
	}
	return true
}

// FormatValue writes value so that Parse reads it back unchanged:
// backslashes and '#' escaped, and quoted when it holds white space. A
// value holding both white space and a double quote cannot be written and
// has its quotes dropped; Merge never makes one.
func FormatValue(value string) string {
	v := strings.NewReplacer(`\`, `\\`, `#`, `\#`).Replace(value)
	if strings.IndexFunc(value, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) }) >= 0 {
		return `"` + strings.ReplaceAll(v, `"`, "") + `"`
	}
	return v
}
