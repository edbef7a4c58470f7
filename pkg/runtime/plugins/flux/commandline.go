package flux

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// CommandLine renders words as one bash command line that the shell splits
// back into exactly these words: each word is quoted as bash needs it
// (mvdan.cc/sh's syntax.Quote), and a word that needs no quoting is left as
// it is. Trainer v2.3 joins the words with spaces instead, so that a word
// with a space or a quote falls apart in its entrypoint; for words that
// need no quoting both render the same line. The error is syntax.Quote's,
// for a word bash cannot hold (a NUL byte).
func CommandLine(words []string) (string, error) {
	quoted := make([]string, len(words))
	for i, w := range words {
		q, err := quoteWord(w, i == 0)
		if err != nil {
			return "", err
		}
		quoted[i] = q
	}
	return strings.Join(quoted, " "), nil
}

// quoteWord quotes one word. syntax.Quote quotes every word with "=",
// which in command position would be an assignment; an argument such as
// --lr=0.1 is literal as it is, unless it holds "~", which bash expands
// after "=" in arguments too. commandName is the first word's position.
func quoteWord(w string, commandName bool) (string, error) {
	q, err := syntax.Quote(w, syntax.LangBash)
	if err != nil {
		return "", err
	}
	if q != w && !commandName && strings.Contains(w, "=") && !strings.Contains(w, "~") {
		plain := strings.ReplaceAll(w, "=", "_")
		if pq, err := syntax.Quote(plain, syntax.LangBash); err == nil && pq == plain {
			return w, nil
		}
	}
	return q, nil
}

// words renders values as the elements of a bash array or argument list
// (none in command position).
func words(values []string) (string, error) {
	quoted := make([]string, len(values))
	for i, v := range values {
		q, err := quoteWord(v, false)
		if err != nil {
			return "", err
		}
		quoted[i] = q
	}
	return strings.Join(quoted, " "), nil
}
