"""One worker of the test of colo run --replicas (cmd/libcolo's
TestColoRunReplicas). Every worker pushes ones into a summing table and a
dense vector, PUSHES times each, without waiting for each push; halfway
it waits for its pushes, rank 0 writes REPLICA_TEST_DIR/half, and every
worker waits for REPLICA_TEST_DIR/go before it pushes the second half
(the test writes it and kills a server at once, so that the second
half's pushes are in flight when the server dies). Then every worker
reads the exact sums: no acknowledged push lost, none applied twice.

It exits 0 when the sums hold, 1 with the reason otherwise."""

import os
import sys
import time

import numpy as np

import colo
import colo.kv

PUSHES = 60


def main():
    d = os.environ["REPLICA_TEST_DIR"]
    colo.init(timeout=60)
    K, rank = colo.size(), colo.rank()
    t = colo.kv.table("acc", 600, 2)
    v = colo.kv.dense("dense", 3000)
    rows = np.arange(0, 600, 3, dtype=np.int64)
    ones = np.ones((len(rows), 2), dtype=np.float32)
    dv = np.ones(3000, dtype=np.float32)
    tickets = []
    for i in range(PUSHES):
        if i == PUSHES // 2:
            colo.kv.wait(*tickets)
            tickets = []
            if rank == 0:
                open(os.path.join(d, "half"), "w").close()
            while not os.path.exists(os.path.join(d, "go")):
                time.sleep(0.005)
        tickets.append(t.push(rows, ones))
        tickets.append(v.push(dv))
    colo.kv.wait(*tickets)
    colo.barrier()
    want = PUSHES * K
    got = t.pull(rows)
    if not np.all(got == want):
        raise AssertionError("worker %d: table sums %s, want %d everywhere" % (rank, np.unique(got), want))
    if not np.all(v.pull() == want):
        raise AssertionError("worker %d: dense sums %s, want %d" % (rank, np.unique(v.pull()), want))
    colo.barrier()
    colo.shutdown()
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print("worker failed: %s" % e)
        sys.exit(1)
