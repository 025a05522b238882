"""One training step of the 20 Newsgroups softmax regression through colo
against the same model with a local torch.nn.EmbeddingBag, side by side,
and where colo's step spends its time.

The model is examples/torch/newsgroups.py's: EmbeddingBag(61189, 20,
mode="sum") over the libsvm features with per_sample_weights, Adagrad
(lr 0.5); batches of 64 random training documents (about 8,300
indices, 3,800 distinct rows), the same batches for every variant. One
process, one thread for torch, colo's server co-located
(colo.init(local=True)). The variants:

* colo: colo.torch.EmbeddingBag, the servers run Adagrad;
* colo_python: the same layer and step with its pull and push left out
  (the pulled rows are zeros, nothing is pushed): the Python side of the
  step, the layer's own cost (finding the distinct rows, autograd, the
  bags' arithmetic and the row gradients);
* colo_calls: only the library calls of colo's step (unique, pull, push,
  wait) on the same rows, back to back without torch: pull and push time,
  the worker client's and the server's part (in the step it costs more:
  torch's work between the calls takes the store out of the caches);
* torch_sparse: torch.nn.EmbeddingBag(sparse=True) and torch's Adagrad;
* torch_dense: torch.nn.EmbeddingBag (dense gradients, the default) and
  torch's Adagrad.

Each round runs every variant once (steps steps each), in an order that
rotates from round to round, so that a change of the machine's load
falls on all of them; the figures are the medians over rounds of the
time per step, wall and CPU (the process's, every thread, the server's
included). The load average is recorded at every round.

    PYTHONPATH=python /usr/bin/python3 python/bench/step.py [--data DIR] [--rounds 9] [--json out.json]
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "torch"))

import colo  # noqa: E402
import colo.kv  # noqa: E402
import colo.optim  # noqa: E402
import colo.torch  # noqa: E402
from colo import _lib  # noqa: E402

LR = 0.5


class _Done:
    """The ticket of a push that was not made."""

    def wait(self):
        return None


def variants(batches, feats, classes):
    """The step functions, each running every batch once."""
    model = colo.torch.EmbeddingBag(feats, classes, mode="sum", optimizer=colo.optim.Adagrad(LR), name="step", init=colo.kv.zeros())

    def colo_step():
        for x, off, wt, y in batches:
            F.cross_entropy(model(x, off, per_sample_weights=wt), y).backward()
        colo.torch.synchronize()

    # The layer without its pull and push.
    bare = colo.torch.EmbeddingBag(feats, classes, mode="sum", optimizer=colo.optim.Adagrad(LR), name="bare", init=colo.kv.zeros())
    bare.table._pull_owned = lambda rows, out: out.zero_()
    bare.table._push_owned = lambda rows, values: _Done()

    def colo_python():
        for x, off, wt, y in batches:
            F.cross_entropy(bare(x, off, per_sample_weights=wt), y).backward()
        colo.torch.synchronize()

    # The calls of colo's step alone, on the rows and gradients it has.
    table = colo.kv.table("calls", feats, classes, optimizer=colo.optim.Adagrad(LR))
    calls = []
    for x, _, _, _ in batches:
        uniq, _ = table.unique(x)
        calls.append((x, torch.empty(uniq.numel(), classes), torch.full((uniq.numel(), classes), 1e-3)))

    def colo_calls():
        k = None
        for x, out, grad in calls:
            uniq, _ = table.unique(x)
            if k is not None:
                k.wait()
            table._pull_owned(uniq, out)
            k = table._push_owned(uniq, grad)
        k.wait()

    def local(sparse):
        m = torch.nn.EmbeddingBag(feats, classes, mode="sum", sparse=sparse)
        torch.nn.init.zeros_(m.weight)
        opt = torch.optim.Adagrad(m.parameters(), lr=LR)

        def run():
            for x, off, wt, y in batches:
                opt.zero_grad()
                F.cross_entropy(m(x, off, per_sample_weights=wt), y).backward()
                opt.step()
        return run

    return {"colo": colo_step, "colo_python": colo_python, "colo_calls": colo_calls, "torch_sparse": local(True), "torch_dense": local(False)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "..", "shared", "data", "20news-bydate"))
    ap.add_argument("--steps", type=int, default=200, help="steps per variant per round")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    import newsgroups

    colo.init(local=True, optimizer=colo.optim.Adagrad(LR))
    data = newsgroups.load(os.path.join(args.data, "20news-bydate.train.libsvm.xz"))
    g = torch.Generator().manual_seed(0)
    batches = [newsgroups.bags(data, torch.randint(0, len(data[0]), (args.batch,), generator=g)) for _ in range(args.steps)]
    fs = variants(batches, newsgroups.FEATURES + 1, newsgroups.CLASSES)
    names = list(fs)
    for f in fs.values():  # warm up
        f()
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for n in names[r % len(names):] + names[:r % len(names)]:
            t0, c0 = time.perf_counter(), time.process_time()
            fs[n]()
            wall[n].append((time.perf_counter() - t0) / args.steps * 1e6)
            cpu[n].append((time.process_time() - c0) / args.steps * 1e6)
    colo.shutdown()
    med = {n: {"wall_us": statistics.median(wall[n]), "cpu_us": statistics.median(cpu[n])} for n in names}
    py = med["colo_python"]
    out = {
        "bench": "20 Newsgroups EmbeddingBag step, colo against local torch",
        "steps": args.steps, "rounds": args.rounds, "batch": args.batch,
        "indices_per_step": statistics.mean(len(b[0]) for b in batches),
        "torch": torch.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_1min": {"min": min(loads), "max": max(loads), "median": statistics.median(loads)},
        "median": med,
        "ratio": {
            "colo/torch_sparse": {k: med["colo"][k] / med["torch_sparse"][k] for k in ("wall_us", "cpu_us")},
            "colo/torch_dense": {k: med["colo"][k] / med["torch_dense"][k] for k in ("wall_us", "cpu_us")},
            "colo_python/torch_sparse": {k: py[k] / med["torch_sparse"][k] for k in ("wall_us", "cpu_us")},
        },
        "samples": {"wall_us": wall, "cpu_us": cpu, "load_1min": loads},
    }
    for n in names:
        print("%-14s %9.1f us wall %9.1f us cpu" % (n, med[n]["wall_us"], med[n]["cpu_us"]))
    for k, v in out["ratio"].items():
        print("%-26s %.2fx wall %.2fx cpu" % (k, v["wall_us"], v["cpu_us"]))
    print("load average (1 min) %.1f-%.1f" % (min(loads), max(loads)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
