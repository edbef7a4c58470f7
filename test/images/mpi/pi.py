"""Estimates pi across MPI ranks, like the MPI operator's pi example.

Every rank integrates 4/(1+x^2) over its share of [0, 1] and rank 0 sums
the shares with MPI_Reduce, so the result needs the ranks to talk to each
other, not only to be started. Each rank reports where it runs, and rank 0
prints the hosts it heard from (gathered over MPI too).
"""

import socket
import sys

from mpi4py import MPI

INTERVALS = 2_000_000


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    host = socket.gethostname()
    print(f"rank {rank} of {size} on {host}", flush=True)

    width = 1.0 / INTERVALS
    share = 0.0
    for i in range(rank, INTERVALS, size):
        x = (i + 0.5) * width
        share += 4.0 / (1.0 + x * x)
    pi = comm.reduce(share * width, op=MPI.SUM, root=0)
    hosts = comm.gather(host, root=0)
    if rank == 0:
        print(f"hosts: {' '.join(sorted(set(hosts)))}", flush=True)
        print(f"pi is approximately {pi:.10f}", flush=True)
        if abs(pi - 3.141592653589793) > 1e-6:
            sys.exit(f"pi is off: {pi}")


if __name__ == "__main__":
    main()
