// Package plainml is the ML policy for runtimes without a framework policy:
// the trainer runs as written, with only the TrainJob's node count and env.
package plainml
