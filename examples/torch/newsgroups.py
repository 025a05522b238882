"""Softmax regression on 20 Newsgroups with colo.torch.EmbeddingBag.

The model is one EmbeddingBag(features + 1, 20, mode="sum") over the
libsvm features (log1p of the counts, each document scaled to unit
norm) with the documents' values as per_sample_weights: row r is feature
r, its index in the file (so that colo's placement of the file's
parameters applies to the rows), and row 0 the bias. The weights live on colo's servers, which run Adagrad; a step
pulls only the rows of the batch's words.

    python3 examples/torch/newsgroups.py                       # one process
    colo run --machines 4 --rule adagrad --lr 0.5 -- python3 examples/torch/newsgroups.py

Options: --data DIR (20news-bydate in ../shared/data, else the repository's
copy, datasets/20news), --epochs, --batch (per worker),
--lr, --placement DIR (colo partition's output: each worker trains on
the documents placed on it, and the rows are keyed as the placement's
parameters; `colo partition --algo random` places both at random, the
baseline of random samples and hashed rows), --eval last (score the test
set after the last epoch only, or with --epochs 0 without training), --json FILE (rank 0 writes the epochs'
training times, excluding the scoring, the loss and the accuracy).
"""

import argparse
import json
import lzma
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import colo
import colo.kv
import colo.torch
from common import DATA, SHIPPED, join, need, steps_per_epoch

FEATURES, CLASSES = 61188, 20


def load(path):
    """Read a libsvm file: labels (0-based), feature ids (as in the file,
    from 1; 0 is the bias), values and document offsets."""
    labels, idx, val, off = [], [], [], [0]
    with lzma.open(path, "rt") as f:
        for line in f:
            parts = line.split()
            labels.append(int(parts[0]) - 1)
            ii = np.array([int(p.split(":")[0]) for p in parts[1:]], dtype=np.int64)
            vv = np.log1p(np.array([float(p.split(":")[1]) for p in parts[1:]], dtype=np.float32))
            vv /= max(np.linalg.norm(vv), 1e-12)
            idx.append(np.append(ii, 0))  # the bias row
            val.append(np.append(vv, np.float32(1)))
            off.append(off[-1] + len(ii) + 1)
    return (torch.tensor(labels), torch.from_numpy(np.concatenate(idx)), torch.from_numpy(np.concatenate(val)),
            torch.tensor(off, dtype=torch.int64))


def bags(data, docs):
    """The input, offsets and weights of documents docs."""
    y, idx, val, off = data
    docs = torch.as_tensor(docs, dtype=torch.int64)
    lens = off[docs + 1] - off[docs]
    offsets = lens.cumsum(0) - lens
    # Position j of the batch is index off[d] + (j - offsets[d]) of the file.
    pos = torch.repeat_interleave(off[docs] - offsets, lens) + torch.arange(int(lens.sum()))
    return idx[pos], offsets, val[pos], y[docs]


def accuracy(model, test):
    """The model's accuracy on the test set (it reads every row the test
    documents touch)."""
    with torch.no_grad():
        x, off, w, y = bags(test, torch.arange(len(test[0])))
        return (model(x, off, per_sample_weights=w).argmax(1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    shared = os.path.join(DATA, "20news-bydate")
    ap.add_argument("--data", default=shared if os.path.isdir(shared) else SHIPPED)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--placement", default=None)
    ap.add_argument("--eval", choices=("epoch", "last"), default="epoch", help="score the test set after every epoch, or the last")
    ap.add_argument("--json", default=None, help="rank 0 writes the run's figures to this file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rule = colo.optim.Adagrad(args.lr)
    need(args.data, ["20news-bydate.train.libsvm.xz", "20news-bydate.test.libsvm.xz"], "20 Newsgroups")
    join(rule)
    train = load(os.path.join(args.data, "20news-bydate.train.libsvm.xz"))
    test = load(os.path.join(args.data, "20news-bydate.test.libsvm.xz"))
    n = len(train[0])
    model = colo.torch.EmbeddingBag(FEATURES + 1, CLASSES, mode="sum", optimizer=rule, name="newsgroups",
                                    init=colo.kv.zeros(), placed=args.placement is not None)
    if args.placement:
        mine = torch.tensor(list(colo.torch.PlacedSampler(n, args.placement, shuffle=False)))
    else:
        mine = torch.arange(colo.rank(), n, colo.size())
    steps = steps_per_epoch(len(mine), args.batch)
    g = torch.Generator().manual_seed(colo.rank())
    colo.barrier()
    t0 = time.time()
    epochs = []
    acc, total = None, 0.0
    for epoch in range(args.epochs):
        e0 = time.time()
        order = mine[torch.randperm(len(mine), generator=g)]
        total = 0.0
        for s in range(steps):
            docs = order[(s * args.batch) % len(order):][:args.batch]
            x, off, w, y = bags(train, docs)
            loss = F.cross_entropy(model(x, off, per_sample_weights=w), y)
            loss.backward()
            total += loss.item()
        colo.torch.synchronize()
        colo.barrier()
        epochs.append(time.time() - e0)
        if colo.rank() == 0 and args.eval == "epoch":
            acc = accuracy(model, test)
            print("epoch %d  loss %.4f  test accuracy %.4f  (%.1f s)" % (epoch + 1, total / steps, acc, time.time() - t0), flush=True)
    if colo.rank() == 0 and args.eval == "last":
        acc = accuracy(model, test)
        print("%d epochs  loss %.4f  test accuracy %.4f  (%.1f s, training %.1f s)" % (args.epochs, total / steps, acc, time.time() - t0, sum(epochs)), flush=True)
    if colo.rank() == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"workers": colo.size(), "placement": args.placement, "batch": args.batch, "steps_per_epoch": steps,
                       "epoch_s": epochs, "train_s": sum(epochs), "loss": total / steps, "accuracy": acc}, f)
    colo.shutdown()


if __name__ == "__main__":
    main()
