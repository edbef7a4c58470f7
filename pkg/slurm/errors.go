package slurm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Slurm error numbers (slurm_errno.h) the operator reacts to.
const (
	// ErrorNumberAuthentication: slurmctld rejected the token.
	ErrorNumberAuthentication = 1007
	// ErrorNumberInvalidJobID: no such job.
	ErrorNumberInvalidJobID = 2017
	// ErrorNumberInvalidNodeName: no such node.
	ErrorNumberInvalidNodeName = 2018
)

// ErrorEntry is one element of slurmrestd's "errors" array.
type ErrorEntry struct {
	Description string `json:"description,omitempty"`
	ErrorNumber int    `json:"error_number,omitempty"`
	Error       string `json:"error,omitempty"`
	Source      string `json:"source,omitempty"`
}

func (e ErrorEntry) String() string {
	var parts []string
	if e.Description != "" {
		parts = append(parts, e.Description)
	}
	// error_number 0 comes with the useless text "No error".
	if e.Error != "" && e.ErrorNumber != 0 {
		parts = append(parts, e.Error)
	}
	s := strings.Join(parts, ": ")
	if e.ErrorNumber != 0 {
		s += fmt.Sprintf(" (error %d)", e.ErrorNumber)
	}
	return s
}

// APIError is a failed slurmrestd call: a non-2xx status, a non-empty
// "errors" array, or both. Its message carries the server's own text so
// events and conditions tell the user what Slurm said.
type APIError struct {
	Method string
	Path   string
	// StatusCode is the HTTP status; 0 when the error was made locally
	// (e.g. by the fake).
	StatusCode int
	Errors     []ErrorEntry
	// Body is the start of a response that was not slurmrestd JSON (a proxy's
	// error page, "Authentication failure").
	Body string
	// notFound marks a lookup that found nothing although slurmrestd said
	// only "Failure to query node x" without an error number.
	notFound bool
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("slurmrestd")
	if e.Method != "" {
		fmt.Fprintf(&b, " %s %s", e.Method, e.Path)
	}
	// A 2xx status with errors[] says nothing the entries do not.
	if e.StatusCode >= 300 || (e.StatusCode != 0 && len(e.Errors) == 0 && e.Body == "") {
		fmt.Fprintf(&b, ": %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	for _, entry := range e.Errors {
		b.WriteString(": ")
		b.WriteString(entry.String())
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	return b.String()
}

// HasErrorNumber reports whether slurmrestd returned error number n.
func (e *APIError) HasErrorNumber(n int) bool {
	for _, entry := range e.Errors {
		if entry.ErrorNumber == n {
			return true
		}
	}
	return false
}

// NewNotFoundError is the error GetNode and UpdateNode return for a node
// Slurm does not know; exported so fakes can return the same thing.
func NewNotFoundError(nodeName string) *APIError {
	return &APIError{
		Errors: []ErrorEntry{{
			Description: "Failure to query node " + nodeName,
			ErrorNumber: ErrorNumberInvalidNodeName,
			Error:       "Invalid node name specified",
		}},
		notFound: true,
	}
}

// IsNotFound reports whether err says the node or job does not exist.
func IsNotFound(err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.notFound || apiErr.StatusCode == http.StatusNotFound ||
		apiErr.HasErrorNumber(ErrorNumberInvalidNodeName) ||
		apiErr.HasErrorNumber(ErrorNumberInvalidJobID)
}
