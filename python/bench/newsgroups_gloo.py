"""examples/torch/newsgroups.py's softmax regression as a PyTorch user
trains it on CPUs without a parameter server: torch.distributed (gloo)
data parallel (DistributedDataParallel), every process a full replica of
the EmbeddingBag(61189, 20, mode="sum") and of torch's Adagrad, the
gradients averaged by an all-reduce each step. The documents, batches
and per-rank seeds are the example's, from a placement's data.part
(`colo partition --algo random`: random samples), so that the same
batches train colo's run and this one.

It runs under colo run, which gives it torchrun's variables (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT); with --netns each process is a
host of its own whose link tc shapes, which gloo's traffic goes through
too (colo run reports the bytes on the links):

    colo run --machines 8 --netns --link-bandwidth 100mbit -- env GLOO_SOCKET_IFNAME=eth0 \\
        python3 python/bench/newsgroups_gloo.py --placement DIR --batch 2000 --epochs 200 --json out.json

The process also joins colo's cluster (colo run's machines host colo's
servers), and uses nothing of it. --sparse makes the embedding's
gradients sparse (DDP then all-gathers them).
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "torch"))

import colo  # noqa: E402
import colo.torch  # noqa: E402
import newsgroups  # noqa: E402
from common import DATA  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(DATA, "20news-bydate"))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--placement", required=True, help="colo partition's output: each rank trains on the documents placed on it")
    ap.add_argument("--sparse", action="store_true", help="sparse gradients for the embedding")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    colo.init(optimizer=colo.optim.Adagrad(args.lr))  # colo run's machines host its servers
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=size)
    train = newsgroups.load(os.path.join(args.data, "20news-bydate.train.libsvm.xz"))
    test = newsgroups.load(os.path.join(args.data, "20news-bydate.test.libsvm.xz"))
    n = len(train[0])
    model = torch.nn.EmbeddingBag(newsgroups.FEATURES + 1, newsgroups.CLASSES, mode="sum", sparse=args.sparse)
    torch.nn.init.zeros_(model.weight)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adagrad(ddp.parameters(), lr=args.lr)
    mine = torch.tensor(list(colo.torch.PlacedSampler(n, args.placement, rank=rank, shuffle=False)))
    count = torch.tensor([len(mine)])
    dist.all_reduce(count, op=dist.ReduceOp.MAX)
    steps = max(1, -(-int(count) // args.batch))
    g = torch.Generator().manual_seed(rank)
    dist.barrier()
    t0 = time.time()
    epochs, total = [], 0.0
    for _ in range(args.epochs):
        e0 = time.time()
        order = mine[torch.randperm(len(mine), generator=g)]
        total = 0.0
        for s in range(steps):
            docs = order[(s * args.batch) % len(order):][:args.batch]
            x, off, w, y = newsgroups.bags(train, docs)
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x, off, per_sample_weights=w), y)
            loss.backward()
            opt.step()
            total += loss.item()
        dist.barrier()
        epochs.append(time.time() - e0)
    if rank == 0:
        acc = newsgroups.accuracy(model, test)
        print("%d epochs  loss %.4f  test accuracy %.4f  (%.1f s, training %.1f s)" % (args.epochs, total / steps, acc, time.time() - t0, sum(epochs)), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"workers": size, "placement": args.placement, "batch": args.batch, "steps_per_epoch": steps, "sparse": args.sparse,
                           "epoch_s": epochs, "train_s": sum(epochs), "loss": total / steps, "accuracy": acc}, f)
    dist.destroy_process_group()
    colo.shutdown()


if __name__ == "__main__":
    main()
