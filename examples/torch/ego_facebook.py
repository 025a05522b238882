"""Node embeddings for link prediction on ego-Facebook with
colo.torch.Embedding (PyTorch-BigGraph's model, as colo train --app embed
has it: a dot product scores an edge, each edge against uniformly drawn
negative nodes, logistic loss).

The embedding table (4,039 nodes × 32) lives on colo's servers, which run
Adagrad; a step pulls the rows of the batch's nodes and their negatives,
once each. 5% of the edges are held out; rank 0 reports their AUC against
random pairs.

    python3 examples/torch/ego_facebook.py                     # one process
    colo run --machines 4 --rule adagrad --lr 0.5 -- python3 examples/torch/ego_facebook.py

Options: --data DIR (ego-Facebook), --epochs, --batch (edges per worker
and step), --dim, --negatives, --lr.
"""

import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import colo
import colo.kv
import colo.torch
from common import DATA, join, need, steps_per_epoch


def auc(pos, neg):
    """The probability that a held-out edge outscores a random pair."""
    s = torch.cat([pos, neg])
    r = torch.empty_like(s)
    r[s.argsort()] = torch.arange(1, len(s) + 1, dtype=s.dtype)
    return ((r[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(DATA, "ego-Facebook"))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--negatives", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    need(args.data, ["facebook_combined.txt.gz"], "ego-Facebook")
    rule = colo.optim.Adagrad(args.lr)
    join(rule)
    with gzip.open(os.path.join(args.data, "facebook_combined.txt.gz"), "rt") as f:
        edges = torch.from_numpy(np.loadtxt(f, dtype=np.int64))
    nodes = int(edges.max()) + 1
    perm = torch.randperm(len(edges), generator=torch.Generator().manual_seed(7))  # the same on every worker
    held = edges[perm[:len(edges) // 20]]
    train = edges[perm[len(edges) // 20:]]
    emb = colo.torch.Embedding(nodes, args.dim, optimizer=rule, name="ego-facebook", init=colo.kv.normal(0, 0.1, seed=1))
    mine = train[colo.rank()::colo.size()]
    steps = steps_per_epoch(len(mine), args.batch)
    g = torch.Generator().manual_seed(100 + colo.rank())
    t0 = time.time()
    for epoch in range(args.epochs):
        order = mine[torch.randperm(len(mine), generator=g)]
        total = 0.0
        for s in range(steps):
            e = order[(s * args.batch) % len(order):][:args.batch]
            b = len(e)
            neg = torch.randint(0, nodes, (b, args.negatives), generator=g)
            x = emb(torch.cat([e[:, 0], e[:, 1], neg.reshape(-1)]))
            u, v, n = x[:b], x[b:2 * b], x[2 * b:].reshape(b, args.negatives, -1)
            pos = (u * v).sum(1)
            negs = (u.unsqueeze(1) * n).sum(2)
            loss = F.softplus(-pos).mean() + F.softplus(negs).sum(1).mean()
            loss.backward()
            total += loss.item()
        colo.torch.synchronize()
        colo.barrier()
        if colo.rank() == 0:
            with torch.no_grad():
                w = emb.weight_of(torch.arange(nodes))
                rnd = torch.randint(0, nodes, (len(held), 2), generator=torch.Generator().manual_seed(3))
                score = lambda p: (w[p[:, 0]] * w[p[:, 1]]).sum(1)
                a = auc(score(held), score(rnd))
            print("epoch %d  loss %.4f  held-out AUC %.4f  (%.1f s)" % (epoch + 1, total / steps, a, time.time() - t0), flush=True)
    colo.shutdown()


if __name__ == "__main__":
    main()
