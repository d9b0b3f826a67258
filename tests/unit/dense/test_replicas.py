"""How training in several processes shares the rows: numpy's array_split order; the number of processes."""

import numpy as np

from hardneg.dense.distributed import Replicas, resolve_processes


def test_shares_are_array_split_order():
    for n in (0, 1, 5, 16, 17):
        for world in (1, 2, 3):
            shares = [np.arange(n)[Replicas(rank=r, world=world).local(n)] for r in range(world)]
            assert [s.tolist() for s in shares] == [s.tolist() for s in np.array_split(np.arange(n), world)]
    assert resolve_processes(None, 0) == 1 and resolve_processes(None, 2) == 2 and resolve_processes(3, 2) == 3
