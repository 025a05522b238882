"""An mlp on Fashion-MNIST whose parameters live on colo's servers,
through colo.torch.DistributedOptimizer.

The model is torch.nn.Sequential(Linear(784, 256), ReLU, Linear(256, 10));
the servers run SGD with momentum. Every gradient is pushed as backward
produces it; step() pulls the new parameters.

    python3 examples/torch/fashion_mlp.py                      # one process
    colo run --machines 4 --rule momentum --lr 0.05 -- python3 examples/torch/fashion_mlp.py

Options: --data DIR (fashion-mnist), --epochs, --batch (per worker), --lr,
--momentum, --checkpoint DIR (save after every epoch, and resume from the
newest checkpoint there when started again: colo.save and colo.load).
"""

import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import colo
import colo.torch
from common import DATA, join, need, steps_per_epoch


def idx(path):
    """Read an idx file (gzip) as a numpy array."""
    with gzip.open(path, "rb") as f:
        b = f.read()
    dims = b[3]
    shape = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(d, split):
    x = idx(os.path.join(d, "%s-images-idx3-ubyte.gz" % split)).reshape(-1, 784).astype(np.float32) / 255.0
    y = idx(os.path.join(d, "%s-labels-idx1-ubyte.gz" % split)).astype(np.int64)
    return torch.from_numpy((x - 0.2860) / 0.3530), torch.from_numpy(y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(DATA, "fashion-mnist"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--checkpoint", default="", help="directory of checkpoints: save after every epoch, resume from the newest")
    args = ap.parse_args()
    torch.set_num_threads(1)
    need(args.data, ["%s-%s-idx%d-ubyte.gz" % (s, k, d) for s in ("train", "t10k") for k, d in (("images", 3), ("labels", 1))], "Fashion-MNIST")
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    join(opt)
    opt = colo.torch.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    xs, ys = load(args.data, "train")
    xt, yt = load(args.data, "t10k")
    mine = torch.arange(colo.rank(), len(ys), colo.size())
    steps = steps_per_epoch(len(mine), args.batch)
    g = torch.Generator().manual_seed(colo.rank())
    first = 0
    if args.checkpoint:
        got = colo.load(args.checkpoint, missing_ok=True)
        if got is not None:
            first = got[1]["epoch"] + 1
            for _ in range(first):  # the sample orders of the epochs done
                torch.randperm(len(mine), generator=g)
            if colo.rank() == 0:
                print("resumed after epoch %d from %s" % (first, args.checkpoint), flush=True)
    t0 = time.time()
    for epoch in range(first, args.epochs):
        order = mine[torch.randperm(len(mine), generator=g)]
        total = 0.0
        for s in range(steps):
            b = order[(s * args.batch) % len(order):][:args.batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(xs[b]), ys[b])
            loss.backward()
            opt.step()
            total += loss.item()
        if colo.rank() == 0:
            with torch.no_grad():
                acc = (model(xt).argmax(1) == yt).float().mean().item()
            print("epoch %d  loss %.4f  test accuracy %.4f  (%.1f s)" % (epoch + 1, total / steps, acc, time.time() - t0), flush=True)
        if args.checkpoint:
            colo.save(args.checkpoint, epoch, state={"epoch": epoch})
    colo.shutdown()


if __name__ == "__main__":
    main()
