// Package torch is the ML policy for PyTorch: it gives the trainer node
// container the PET_* variables torchrun reads, so the training command can
// be a bare `torchrun train.py`.
package torch
