// Package podcond answers the questions about a Pod's state that more than one
// workload family asks.
package podcond
