"""The environment torchrun gives each process it starts, for starting ranks
on this host without it (torch 1.13's torchrun fails on Python 3.11): used by
the tests' run_ranks (tests/python/conftest.py) and bench/multi_gpu_bench.py.

Here, not in the ladle package: a user starts ranks with torchrun, which
writes these variables; ladle only reads them (fn.py shards readers by RANK
and WORLD_SIZE, pipeline.py picks the GPU by LOCAL_RANK)."""

import socket


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (for MASTER_PORT)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(base, rank, world, port):
    """A copy of the mapping `base` (os.environ, or a child's environment) as
    torchrun writes it for rank `rank` of `world`, all on this host
    (LOCAL_RANK = RANK), meeting at 127.0.0.1:`port`, with one OpenMP thread
    (torchrun's default when it starts several processes)."""
    env = dict(base)
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    return env
