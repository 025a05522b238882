"""Client overhead of colo's Python client, on a one-machine cluster in
this process (the server co-located with the worker):

* the fixed cost of a call: ctypes into Go and back (colo_nop), and
  colo.rank() through the Python wrapper;
* a pull of 4,096 rows × 16 float32 (sorted, unique, from a table of
  100,000 rows) into a preallocated tensor, against torch's index_select of
  the same rows from a local tensor;
* a training step of the 20 Newsgroups softmax regression (EmbeddingBag,
  mode sum, Adagrad on the servers) against the same model with a local
  torch.nn.EmbeddingBag (dense and sparse gradients, torch's Adagrad).

    PYTHONPATH=python /usr/bin/python3 python/bench/client.py [--data DIR]

Prints one line per figure: the median over repeats, in microseconds.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "torch"))

import colo
import colo.kv
import colo.torch
from colo import _lib


class Time:
    """Median wall and process CPU time per call, in microseconds: on a
    loaded machine the wall time includes the waits for a core, the CPU
    time (every thread of the process, the server's included) does not."""

    def __init__(self, wall, cpu):
        self.wall, self.cpu = wall, cpu

    def __str__(self):
        return "%8.2f us wall %8.2f us cpu" % (self.wall, self.cpu)

    def __truediv__(self, k):
        return Time(self.wall / k, self.cpu / k)


def median_us(f, n, repeats=7):
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            f()
        wall.append((time.perf_counter() - t0) / n * 1e6)
        cpu.append((time.process_time() - c0) / n * 1e6)
    return Time(statistics.median(wall), statistics.median(cpu))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    colo.init(local=True, optimizer=colo.optim.Adagrad(0.5))
    L = _lib.lib()
    print("%-52s %s" % ("fixed cost, ctypes call into Go (colo_nop):", median_us(lambda: L.colo_nop(1), 100000)))
    print("%-52s %s" % ("fixed cost, colo.rank():", median_us(colo.rank, 100000)))

    rows_total, dim, n = 100000, 16, 4096
    t = colo.kv.table("bench", rows_total, dim)
    allrows = np.arange(rows_total, dtype=np.int64)
    for i in range(0, rows_total, 20000):
        t.push(allrows[i:i + 20000], np.ones((20000, dim), np.float32)).wait()
    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(rows_total, n, replace=False)).astype(np.int64)
    out = torch.empty(n, dim)
    rows_t = torch.from_numpy(rows)
    pull = lambda: t.pull(rows_t, out)
    print("%-52s %s" % ("pull 4096 x 16 float32, colo.kv:", median_us(pull, 300)))
    k = lambda: L.colo_wait(L.colo_pull(t._handle, rows.ctypes.data, n, out.data_ptr(), n * dim))
    print("%-52s %s" % ("pull 4096 x 16 float32, C calls only:", median_us(k, 300)))
    w = torch.randn(rows_total, dim)
    sel = lambda: torch.index_select(w, 0, rows_t)
    print("%-52s %s" % ("torch.index_select of the same rows:", median_us(sel, 300)))
    dst = torch.empty(n, dim)
    sel_out = lambda: torch.index_select(w, 0, rows_t, out=dst)
    print("%-52s %s" % ("torch.index_select into a preallocated out:", median_us(sel_out, 300)))

    if args.data is None:
        return
    import newsgroups

    data = newsgroups.load(os.path.join(args.data, "20news-bydate.train.libsvm.xz"))
    nd = len(data[0])
    g = torch.Generator().manual_seed(0)
    batches = [newsgroups.bags(data, torch.randint(0, nd, (64,), generator=g)) for _ in range(args.steps)]
    feats = newsgroups.FEATURES + 1
    model = colo.torch.EmbeddingBag(feats, 20, mode="sum", optimizer=colo.optim.Adagrad(0.5), name="ng", init=colo.kv.zeros())

    def colo_steps():
        for x, off, wt, y in batches:
            F.cross_entropy(model(x, off, per_sample_weights=wt), y).backward()
        colo.torch.synchronize()

    def local_steps(sparse):
        m = torch.nn.EmbeddingBag(feats, 20, mode="sum", sparse=sparse)
        torch.nn.init.zeros_(m.weight)
        opt = torch.optim.Adagrad(m.parameters(), lr=0.5)

        def run():
            for x, off, wt, y in batches:
                opt.zero_grad()
                F.cross_entropy(m(x, off, per_sample_weights=wt), y).backward()
                opt.step()
        return run

    for name, f in [("colo EmbeddingBag", colo_steps), ("torch EmbeddingBag, sparse grads", local_steps(True)),
                    ("torch EmbeddingBag, dense grads", local_steps(False))]:
        us = median_us(f, 1, repeats=5) / args.steps
        print("%-52s %s" % ("20 Newsgroups step (batch 64), " + name + ":", us))
    colo.shutdown()


if __name__ == "__main__":
    main()
