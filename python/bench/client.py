"""Client overhead of colo's Python client, on a one-machine cluster in
this process (the server co-located with the worker):

* the fixed cost of a call: ctypes into Go and back (colo_nop),
  colo.rank() through the Python wrapper, and a pull of one row;
* a pull of 4,096 rows × 16 float32 (sorted, unique, from a table of
  100,000 rows) into a preallocated tensor, against torch's index_select of
  the same rows from a local tensor;
  these figures are measured in interleaved turns (each once per turn)
  and reported as medians over the turns, with the load average before
  and after (--json FILE writes them); in each turn a figure's first
  call is timed alone ("cold": after the other figures ran, its data and
  the threads that serve it out of the caches, and on a loaded machine
  after other processes had the core) and the calls after it together
  (warm, the figure);
* a training step of the 20 Newsgroups softmax regression (EmbeddingBag,
  mode sum, Adagrad on the servers) against the same model with a local
  torch.nn.EmbeddingBag (dense and sparse gradients, torch's Adagrad).

    PYTHONPATH=python /usr/bin/python3 python/bench/client.py [--data DIR] [--json FILE]

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


def interleaved(fs, repeats):
    """Median wall and CPU time per call of each (name, f, calls) of fs,
    measured in turns (each f once per repeat, one after the other), so
    that a change of the machine's load falls on all of them alike; also
    the smallest and largest wall time of the repeats, and the median time
    of the turns' first calls, timed apart (cold). A first call after the
    other figures costs several times a warm one (a pull of 4,096 rows:
    0.25-0.7 ms of CPU against 46-51 us, at load 21), and the calls after
    it come down to a warm one's time over some 20 calls, as the rows come
    back into the caches: batches of 20 read 75-85 us a call where
    batches of 200 read 49-53, so the pulls of 4,096 rows are timed in
    batches of 200."""
    wall = {name: [] for name, _, _ in fs}
    cpu = {name: [] for name, _, _ in fs}
    cold_wall = {name: [] for name, _, _ in fs}
    cold_cpu = {name: [] for name, _, _ in fs}
    for _ in range(repeats):
        for name, f, calls in fs:
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            cold_wall[name].append((time.perf_counter() - t0) * 1e6)
            cold_cpu[name].append((time.process_time() - c0) * 1e6)
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(calls):
                f()
            wall[name].append((time.perf_counter() - t0) / calls * 1e6)
            cpu[name].append((time.process_time() - c0) / calls * 1e6)
    return {name: (Time(statistics.median(wall[name]), statistics.median(cpu[name])), min(wall[name]), max(wall[name]),
                   Time(statistics.median(cold_wall[name]), statistics.median(cold_cpu[name])))
            for name, _, _ in fs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=15, help="turns of the interleaved pull figures")
    ap.add_argument("--json", default=None, help="also write the pull figures and the load average to this file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    colo.init(local=True, optimizer=colo.optim.Adagrad(0.5))
    L = _lib.lib()

    rows_total, dim, n = 100000, 16, 4096
    t = colo.kv.table("bench", rows_total, dim)
    allrows = np.arange(rows_total, dtype=np.int64)
    for i in range(0, rows_total, 20000):
        t.push(allrows[i:i + 20000], np.ones((20000, dim), np.float32)).wait()
    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(rows_total, n, replace=False)).astype(np.int64)
    out = torch.empty(n, dim)
    rows_t = torch.from_numpy(rows)
    one, one_out = rows[:1].copy(), torch.empty(1, dim)
    w = torch.randn(rows_total, dim)
    dst = torch.empty(n, dim)
    # The pointers taken once, as a layer holds its buffers: the calls
    # alone, without numpy's and torch's making of the arguments.
    one_p, one_out_p, h = one.ctypes.data, one_out.data_ptr(), t._handle
    figures = [
        ("fixed cost, ctypes call into Go (colo_nop)", lambda: L.colo_nop(1), 2000),
        ("fixed cost, colo.rank()", colo.rank, 2000),
        ("fixed cost, pull of 1 row x 16, C calls", lambda: L.colo_wait(L.colo_pull(t._handle, one.ctypes.data, 1, one_out.data_ptr(), dim)), 200),
        ("fixed cost, pull of 1 row x 16, C calls, pointers", lambda: L.colo_wait(L.colo_pull(h, one_p, 1, one_out_p, dim)), 2000),
        ("fixed cost, pull of 1 row x 16, colo_pull_wait, pointers", lambda: L.colo_pull_wait(h, one_p, 1, one_out_p, dim), 2000),
        ("pull 4096 x 16 float32, colo.kv", lambda: t.pull(rows_t, out), 200),
        ("pull 4096 x 16 float32, C calls only", lambda: L.colo_wait(L.colo_pull(t._handle, rows.ctypes.data, n, out.data_ptr(), n * dim)), 200),
        ("pull 4096 x 16 float32, colo_pull_wait", lambda: L.colo_pull_wait(t._handle, rows.ctypes.data, n, out.data_ptr(), n * dim), 200),
        ("torch.index_select of the same rows", lambda: torch.index_select(w, 0, rows_t), 200),
        ("torch.index_select into a preallocated out", lambda: torch.index_select(w, 0, rows_t, out=dst), 200),
    ]
    load0 = os.getloadavg()
    got = interleaved(figures, args.repeats)
    load1 = os.getloadavg()
    print("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after; %d interleaved turns" % (load0 + load1 + (args.repeats,)))
    for name, _, _ in figures:
        tm, lo, hi, cold = got[name]
        print("%-52s %s  (wall %.2f-%.2f; first call of a turn %.1f wall, %.1f cpu)" % (name + ":", tm, lo, hi, cold.wall, cold.cpu))
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"load_before": load0, "load_after": load1, "turns": args.repeats,
                       "figures": {name: {"wall_us": got[name][0].wall, "cpu_us": got[name][0].cpu,
                                          "wall_us_min": got[name][1], "wall_us_max": got[name][2],
                                          "cold_wall_us": got[name][3].wall, "cold_cpu_us": got[name][3].cpu}
                                   for name, _, _ in figures}}, f, indent=1)
            f.write("\n")

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
