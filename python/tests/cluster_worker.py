"""One worker of a multi-worker test of colo's Python client. The test
that starts it (cmd/libcolo's TestPythonCluster) runs a scheduler and
servers and sets COLO_SCHEDULER, COLO_TOKEN, COLO_RANK, COLO_RULE and
COLO_TEST_SCENARIO (or the first argument, under colo run):

* bsp: K workers train an EmbeddingBag and a dense layer under BSP, each on
  its share of every batch; the model must equal the one a single process
  trains on the union of the batches.
* branch: workers whose models take different branches (some
  parameters get no gradient on some workers) train under BSP without
  their rounds parting, and end with the same parameters.
* async: K workers push from several threads at once into a summing
  table; every worker then reads the exact total.

It exits 0 when the check holds, 1 with the reason otherwise."""

import os
import sys
import threading

import numpy as np
import torch
import torch.nn.functional as F

import colo
import colo.kv
import colo.torch

torch.set_num_threads(1)


def bsp():
    colo.init(optimizer=colo.optim.SGD(0.5), timeout=60)  # the servers' rule; under mpirun, the ranks' servers run it
    K, rank = colo.size(), colo.rank()
    num, dim, classes, per = 40, 5, 3, 4
    lr = 0.5
    rule = colo.optim.SGD(lr)
    emb = colo.torch.EmbeddingBag(num, dim, mode="sum", optimizer=rule, name="emb", init=colo.kv.normal(0, 0.5, seed=9))
    torch.manual_seed(100 + rank)  # different on every worker: rank 0's wins
    lin = torch.nn.Linear(dim, classes)
    opt = colo.torch.DistributedOptimizer(torch.optim.SGD(lin.parameters(), lr=lr), named_parameters=lin.named_parameters())
    ref_emb = torch.nn.EmbeddingBag(num, dim, mode="sum")
    ref_lin = torch.nn.Linear(dim, classes)
    with torch.no_grad():
        ref_emb.weight.copy_(emb.initial_weight())
        ref_lin.load_state_dict(lin.state_dict())
    ref_opt = torch.optim.SGD(list(ref_emb.parameters()) + list(ref_lin.parameters()), lr=lr)
    g = torch.Generator().manual_seed(11)
    for step in range(6):
        x = torch.randint(0, num, (K * per, 6), generator=g)
        y = torch.randint(0, classes, (K * per,), generator=g)
        mine = slice(rank * per, (rank + 1) * per)
        opt.zero_grad()
        F.cross_entropy(lin(emb(x[mine])), y[mine]).backward()
        opt.step()
        ref_opt.zero_grad()
        F.cross_entropy(ref_lin(ref_emb(x)), y).backward()
        ref_opt.step()
    colo.torch.synchronize()
    colo.barrier()
    np.testing.assert_allclose(emb.weight_of(torch.arange(num)).numpy(), ref_emb.weight.detach().numpy(), rtol=1e-4, atol=1e-5,
                               err_msg="worker %d: the embedding differs from the single-process model" % rank)
    for (n, a), (_, b) in zip(lin.named_parameters(), ref_lin.named_parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg="worker %d: parameter %s differs from the single-process model" % (rank, n))
    colo.shutdown()
    return rank


def branch():
    """Workers that take different branches push as many times a step."""
    colo.init(optimizer=colo.optim.SGD(0.5), timeout=60)
    rank = colo.rank()
    torch.manual_seed(1)
    a, b = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    params = [("a." + n, p) for n, p in a.named_parameters()] + [("b." + n, p) for n, p in b.named_parameters()]
    opt = colo.torch.DistributedOptimizer(torch.optim.SGD([p for _, p in params], lr=0.5), named_parameters=params)
    g = torch.Generator().manual_seed(rank)
    for step in range(5):
        x = torch.randn(8, 4, generator=g)
        opt.zero_grad()
        out = a(x) if rank % 2 else a(x) + b(x)  # odd ranks leave b out
        out.pow(2).mean().backward()
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for _, p in params]).to(torch.float64).numpy()
    total = colo.allreduce(flat)
    if not np.allclose(total, colo.size() * flat, rtol=0, atol=1e-6):
        raise AssertionError("worker %d: the workers' parameters differ" % rank)
    colo.shutdown()
    return rank


def async_sums():
    colo.init(timeout=60)
    K, rank = colo.size(), colo.rank()
    t = colo.kv.table("acc", 1000, 3)
    d = colo.kv.dense("dense", 20000)
    rows = np.arange(0, 1000, 7, dtype=np.int64)
    pushes, threads = 10, 4
    errors = []

    def pusher(i):
        try:
            vals = np.full((len(rows), 3), rank + 1, dtype=np.float32)
            dv = np.full(20000, i + 1, dtype=np.float32)
            ts = []
            for _ in range(pushes):
                ts.append(t.push(rows, vals))
                ts.append(d.push(dv))
            for k in ts:
                k.wait()
        except Exception as e:  # reported below
            errors.append(e)

    th = [threading.Thread(target=pusher, args=(i,)) for i in range(threads)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    if errors:
        raise errors[0]
    colo.barrier()
    got = t.pull(rows)
    want = pushes * threads * sum(k + 1 for k in range(K))
    if not np.all(got == want):
        raise AssertionError("worker %d: sums %s, want %d everywhere" % (rank, np.unique(got), want))
    other = np.setdiff1d(np.arange(1000), rows)[:10]
    if np.any(t.pull(other) != 0):
        raise AssertionError("worker %d: rows never pushed are not zero" % rank)
    dw = pushes * K * sum(i + 1 for i in range(threads))
    if not np.all(d.pull() == dw):
        raise AssertionError("worker %d: dense sums %s, want %d" % (rank, np.unique(d.pull()), dw))
    colo.shutdown()
    return rank


if __name__ == "__main__":
    try:
        scenario = os.environ.get("COLO_TEST_SCENARIO") or sys.argv[1]
        rank = {"bsp": bsp, "async": async_sums, "branch": branch}[scenario]()
    except Exception as e:
        print("FAIL: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
    print("ok: worker %d" % rank)
