"""Tests of colo's Python client on a one-machine cluster inside the
process (colo.init(local=True)): the layers against torch's own, step for
step, and the refusals of bad input."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import torch
import torch.nn.functional as F

import colo
import colo.kv
import colo.torch

torch.set_num_threads(1)


def batches(num, bags, length, classes, steps, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randint(0, num, (bags, length), generator=g)
        y = torch.randint(0, classes, (bags,), generator=g)
        yield x, y


class Local(unittest.TestCase):
    def tearDown(self):
        colo.shutdown()

    def check_embedding_bag(self, rule, make_ref_opt, mode, init=None):
        colo.init(local=True, optimizer=rule)
        num, dim = 50, 6
        emb = colo.torch.EmbeddingBag(num, dim, mode=mode, optimizer=rule, init=init)
        ref = torch.nn.EmbeddingBag(num, dim, mode=mode)
        with torch.no_grad():
            ref.weight.copy_(emb.initial_weight())
        opt = make_ref_opt(ref.parameters())
        for x, y in batches(num, 8, 5, dim, 6, seed=1):
            loss = F.cross_entropy(emb(x), y)
            loss.backward()
            opt.zero_grad()
            F.cross_entropy(ref(x), y).backward()
            opt.step()
            colo.torch.synchronize()
            got = emb.weight_of(torch.arange(num))
            np.testing.assert_allclose(got.numpy(), ref.weight.detach().numpy(), rtol=2e-5, atol=2e-6)

    def test_embedding_bag_sgd_sum(self):
        self.check_embedding_bag(colo.optim.SGD(0.5), lambda p: torch.optim.SGD(p, lr=0.5), "sum")

    def test_embedding_bag_sgd_mean(self):
        self.check_embedding_bag(colo.optim.SGD(0.5), lambda p: torch.optim.SGD(p, lr=0.5), "mean", init=colo.kv.uniform(-0.1, 0.1, seed=4))

    def test_embedding_bag_adagrad(self):
        self.check_embedding_bag(colo.optim.Adagrad(0.3), lambda p: torch.optim.Adagrad(p, lr=0.3), "sum")

    def test_embedding_offsets(self):
        colo.init(local=True, optimizer=colo.optim.SGD(0.1))
        emb = colo.torch.EmbeddingBag(20, 3, mode="sum")
        ref = torch.nn.EmbeddingBag(20, 3, mode="sum")
        with torch.no_grad():
            ref.weight.copy_(emb.initial_weight())
        x = torch.tensor([1, 5, 5, 7, 19, 0], dtype=torch.int64)
        off = torch.tensor([0, 2, 5], dtype=torch.int64)
        w = torch.rand(6)
        np.testing.assert_allclose(emb(x, off, per_sample_weights=w).detach().numpy(), ref(x, off, per_sample_weights=w).detach().numpy(), rtol=1e-6)

    def check_bags_offsets(self, mode, weights):
        # 1-D input with offsets: repeated rows within and across bags, an
        # empty bag, per_sample_weights; the rows after each step equal
        # torch's, and so do the per_sample_weights' gradients when they
        # require grad.
        rule = colo.optim.Adagrad(0.2)
        colo.init(local=True, optimizer=rule)
        num, dim = 40, 5
        emb = colo.torch.EmbeddingBag(num, dim, mode=mode, optimizer=rule, init=colo.kv.normal(0, 0.3, seed=2))
        ref = torch.nn.EmbeddingBag(num, dim, mode=mode)
        with torch.no_grad():
            ref.weight.copy_(emb.initial_weight())
        opt = torch.optim.Adagrad(ref.parameters(), lr=0.2)
        g = torch.Generator().manual_seed(8)
        for step in range(5):
            x = torch.randint(0, num, (23,), generator=g)
            x[3] = x[4] = x[17]  # repeats
            off = torch.tensor([0, 4, 4, 9, 15, 22], dtype=torch.int64)  # bag 1 is empty
            y = torch.randint(0, dim, (6,), generator=g)
            w = None
            if weights is not None:
                w = torch.rand(23, generator=g).requires_grad_(weights == "grad")
            loss = F.cross_entropy(emb(x, off, per_sample_weights=w), y)
            loss.backward()
            wg = None if w is None or w.grad is None else w.grad.clone()
            if w is not None:
                w.grad = None
            opt.zero_grad()
            F.cross_entropy(ref(x, off, per_sample_weights=w), y).backward()
            opt.step()
            colo.torch.synchronize()
            np.testing.assert_allclose(emb.weight_of(torch.arange(num)).numpy(), ref.weight.detach().numpy(), rtol=2e-5, atol=2e-6, err_msg="step %d" % step)
            if weights == "grad":
                np.testing.assert_allclose(wg.numpy(), w.grad.numpy(), rtol=2e-5, atol=2e-6)

    def test_bags_offsets_sum(self):
        self.check_bags_offsets("sum", None)

    def test_bags_offsets_weights(self):
        self.check_bags_offsets("sum", "const")

    def test_bags_offsets_weights_grad(self):
        self.check_bags_offsets("sum", "grad")

    def test_bags_offsets_mean(self):
        self.check_bags_offsets("mean", None)

    def test_bags_offsets_max(self):
        self.check_bags_offsets("max", None)

    def test_bags_2d_weights_average(self):
        # 2-D input with per_sample_weights, two layers in one model, and
        # average=False against a loss summed by hand.
        colo.init(local=True, optimizer=colo.optim.SGD(0.3))
        a = colo.torch.EmbeddingBag(12, 3, mode="sum", average=False, init=colo.kv.uniform(-1, 1, seed=1))
        b = colo.torch.Embedding(12, 3, average=False, init=colo.kv.uniform(-1, 1, seed=2))
        ra, rb = torch.nn.EmbeddingBag(12, 3, mode="sum"), torch.nn.Embedding(12, 3)
        with torch.no_grad():
            ra.weight.copy_(a.initial_weight())
            rb.weight.copy_(b.initial_weight())
        opt = torch.optim.SGD(list(ra.parameters()) + list(rb.parameters()), lr=0.3)
        g = torch.Generator().manual_seed(4)
        for _ in range(4):
            x = torch.randint(0, 12, (5, 4), generator=g)
            w = torch.rand(5, 4, generator=g)
            q = torch.randint(0, 12, (5, 2), generator=g)
            (a(x, per_sample_weights=w) * b(q).sum(1)).sum().backward()
            opt.zero_grad()
            (ra(x, per_sample_weights=w) * rb(q).sum(1)).sum().backward()
            opt.step()
            colo.torch.synchronize()
            np.testing.assert_allclose(a.weight_of(torch.arange(12)).numpy(), ra.weight.detach().numpy(), rtol=2e-5, atol=2e-6)
            np.testing.assert_allclose(b.weight_of(torch.arange(12)).numpy(), rb.weight.detach().numpy(), rtol=2e-5, atol=2e-6)

    def test_embedding_sgd(self):
        colo.init(local=True, optimizer=colo.optim.SGD(0.2))
        emb = colo.torch.Embedding(30, 4, optimizer=colo.optim.SGD(0.2))
        ref = torch.nn.Embedding(30, 4)
        with torch.no_grad():
            ref.weight.copy_(emb.initial_weight())
        opt = torch.optim.SGD(ref.parameters(), lr=0.2)
        g = torch.Generator().manual_seed(3)
        for _ in range(5):
            a = torch.randint(0, 30, (16, 2), generator=g)
            loss = (emb(a[:, 0]) * emb(a[:, 1])).sum(1).sigmoid().log().mean()
            loss.backward()
            opt.zero_grad()
            ((ref(a[:, 0]) * ref(a[:, 1])).sum(1).sigmoid().log().mean()).backward()
            opt.step()
            colo.torch.synchronize()
            np.testing.assert_allclose(emb.weight_of(torch.arange(30)).numpy(), ref.weight.detach().numpy(), rtol=2e-5, atol=2e-6)

    def check_optimizer(self, make_opt):
        torch.manual_seed(5)
        mlp = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        ref = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        ref.load_state_dict(mlp.state_dict())
        opt = make_opt(mlp.parameters())
        colo.init(local=True, optimizer=opt)
        dopt = colo.torch.DistributedOptimizer(opt, named_parameters=mlp.named_parameters())
        ropt = make_opt(ref.parameters())
        g = torch.Generator().manual_seed(6)
        for _ in range(8):
            x, y = torch.randn(12, 10, generator=g), torch.randint(0, 3, (12,), generator=g)
            dopt.zero_grad()
            F.cross_entropy(mlp(x), y).backward()
            dopt.step()
            ropt.zero_grad()
            F.cross_entropy(ref(x), y).backward()
            ropt.step()
        for (n, a), (_, b) in zip(mlp.named_parameters(), ref.named_parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=n)

    def test_distributed_optimizer_sgd(self):
        self.check_optimizer(lambda p: torch.optim.SGD(p, lr=0.1))

    def test_distributed_optimizer_momentum(self):
        self.check_optimizer(lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9))

    def test_distributed_optimizer_adam(self):
        self.check_optimizer(lambda p: torch.optim.Adam(p, lr=0.01))

    def test_distributed_optimizer_unused(self):
        # A parameter without a gradient (None, a branch not taken) is
        # left alone, as torch's Adam leaves it: neither its value nor
        # its moments move, where zeros would have moved both.
        torch.manual_seed(7)
        a, b = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
        ra, rb = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
        ra.load_state_dict(a.state_dict())
        rb.load_state_dict(b.state_dict())
        opt = torch.optim.Adam(list(a.parameters()) + list(b.parameters()), lr=0.05)
        colo.init(local=True, optimizer=opt)
        named = [("a." + n, p) for n, p in a.named_parameters()] + [("b." + n, p) for n, p in b.named_parameters()]
        dopt = colo.torch.DistributedOptimizer(opt, named_parameters=named)
        ropt = torch.optim.Adam(list(ra.parameters()) + list(rb.parameters()), lr=0.05)
        g = torch.Generator().manual_seed(3)
        for step in range(6):
            x = torch.randn(5, 4, generator=g)
            use_b = step in (0, 1, 4)
            dopt.zero_grad(set_to_none=True)
            (a(x) + b(x) if use_b else a(x)).pow(2).mean().backward()
            dopt.step()
            ropt.zero_grad(set_to_none=True)
            (ra(x) + rb(x) if use_b else ra(x)).pow(2).mean().backward()
            ropt.step()
            for (n, p), q in zip(named, list(ra.parameters()) + list(rb.parameters())):
                np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg="step %d %s" % (step, n))

    def checkpoint_model(self, seed, rows=40):
        torch.manual_seed(seed)
        emb = colo.torch.EmbeddingBag(rows, 6, mode="sum", init=colo.kv.normal(0, 0.3, seed=2))
        mlp = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
        opt = colo.torch.DistributedOptimizer(torch.optim.Adam(mlp.parameters(), lr=0.02), named_parameters=mlp.named_parameters())
        return emb, mlp, opt

    def checkpoint_steps(self, emb, mlp, opt, data):
        for x, y in data:
            opt.zero_grad()
            F.cross_entropy(mlp(emb(x)), y).backward()
            opt.step()
            colo.torch.synchronize()

    def test_checkpoint_resume(self):
        # Steps 3 to 6 after loading the checkpoint of step 3 end where
        # steps 0 to 6 without a stop end, bit for bit: the rows, Adam's
        # moments and step counts on the servers, and the dense
        # parameters whatever the new model was initialised to.
        data = list(batches(40, 8, 5, 3, 6, seed=11))
        adam = colo.optim.Adam(0.02)
        with tempfile.TemporaryDirectory() as d:
            colo.init(local=True, optimizer=adam)
            emb, mlp, opt = self.checkpoint_model(seed=1)
            self.checkpoint_steps(emb, mlp, opt, data[:3])
            colo.save(d, 3, state={"epoch": 3})
            self.checkpoint_steps(emb, mlp, opt, data[3:])
            want = [emb.weight_of(torch.arange(40))] + [p.detach().clone() for p in mlp.parameters()]
            colo.shutdown()

            colo.init(local=True, optimizer=adam)
            self.assertIsNone(colo.load(os.path.join(d, "none"), missing_ok=True))
            emb, mlp, opt = self.checkpoint_model(seed=2)  # other starting values
            step, state = colo.load(d)
            self.assertEqual((step, state), (3, {"epoch": 3}))
            self.checkpoint_steps(emb, mlp, opt, data[3:])
            got = [emb.weight_of(torch.arange(40))] + [p.detach().clone() for p in mlp.parameters()]
            for i, (a, b) in enumerate(zip(got, want)):
                np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg="tensor %d" % i)
            # Loading after a push is refused.
            with self.assertRaisesRegex(colo.ColoValueError, "pushed already"):
                colo.load(d)
            colo.shutdown()

            # Another model's checkpoint: refused, naming the table.
            colo.init(local=True, optimizer=adam)
            self.checkpoint_model(seed=1, rows=41)
            with self.assertRaisesRegex(colo.ColoValueError, "41 rows"):
                colo.load(d)
            with self.assertRaisesRegex(colo.ColoValueError, "step -1"):
                colo.save(d, -1)

    def test_kv_async_tickets(self):
        colo.init(local=True, optimizer=colo.optim.Sum(), consistency="async")
        t = colo.kv.table("acc", 100, 2)
        rows = np.arange(0, 100, 3, dtype=np.int64)
        ones = np.ones((len(rows), 2), np.float32)
        ts = [t.push(rows, ones) for _ in range(20)]
        for k in ts:
            k.wait()
        k = t.pull(rows, wait=False)
        got = k.wait()
        np.testing.assert_array_equal(got, 20 * ones)
        self.assertTrue(k.poll())
        tv = torch.zeros(len(rows), 2)
        t.pull(torch.from_numpy(rows), tv)
        np.testing.assert_array_equal(tv.numpy(), 20 * ones)


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        colo.init(local=True, optimizer=colo.optim.SGD(0.1))
        cls.t = colo.kv.table("bad", 10, 4)

    @classmethod
    def tearDownClass(cls):
        colo.shutdown()

    def test_non_contiguous(self):
        v = torch.zeros(4, 2)
        with self.assertRaisesRegex(colo.ColoValueError, r"table 'bad': values: a non-contiguous tensor"):
            self.t.push(torch.tensor([1, 2]), torch.zeros(4, 2).t())
        with self.assertRaisesRegex(colo.ColoValueError, r"non-contiguous array"):
            self.t.push(np.array([1, 2]), np.zeros((4, 4), np.float32)[:, ::2])
        del v

    def test_dtype(self):
        with self.assertRaisesRegex(colo.ColoValueError, r"table 'bad': values: a tensor of torch.float64, want torch.float32"):
            self.t.push(torch.tensor([1, 2]), torch.zeros(2, 4, dtype=torch.float64))
        with self.assertRaisesRegex(colo.ColoValueError, r"rows: an array of int32, want int64"):
            self.t.pull(np.array([1, 2], dtype=np.int32))
        with self.assertRaisesRegex(colo.ColoValueError, r"want 8"):
            self.t.push(np.array([1, 2]), np.zeros(7, np.float32))

    def test_index_out_of_range(self):
        with self.assertRaisesRegex(IndexError, r'table "bad": row 10 \(index 1 of 2\) out of range \[0, 10\)'):
            self.t.pull(np.array([3, 10]))
        emb = colo.torch.EmbeddingBag(5, 2, name="bag")
        with self.assertRaisesRegex(IndexError, r"EmbeddingBag 'bag': .*row 7 \(index 1 of 2\) out of range \[0, 5\)"):
            emb(torch.tensor([[1, 7]]))

    def test_bad_offsets(self):
        emb = colo.torch.EmbeddingBag(5, 2, mode="sum", name="offs")
        x = torch.tensor([1, 2, 3])
        with self.assertRaisesRegex(colo.ColoValueError, r"EmbeddingBag 'offs': offsets \[0, 2, 1\]: want ascending offsets from 0 to at most len\(input\) 3"):
            emb(x, torch.tensor([0, 2, 1]))
        with self.assertRaisesRegex(colo.ColoValueError, r"offsets \[1\]: want ascending offsets from 0"):
            emb(x, torch.tensor([1]))
        with self.assertRaisesRegex(colo.ColoValueError, r"offsets \[0, 4\]"):
            emb(x, torch.tensor([0, 4]))
        with self.assertRaisesRegex(colo.ColoValueError, r"per_sample_weights of shape \(2,\), want the input's \(3,\)"):
            emb(x, torch.tensor([0]), per_sample_weights=torch.ones(2))
        with self.assertRaisesRegex(colo.ColoValueError, r"per_sample_weights: torch.float64 on cpu, want float32"):
            emb(x, torch.tensor([0]), per_sample_weights=torch.ones(3, dtype=torch.float64))
        mean = colo.torch.EmbeddingBag(5, 2, mode="mean", name="offs-mean")
        with self.assertRaisesRegex(colo.ColoValueError, r"per_sample_weights: only with mode 'sum'"):
            mean(x, torch.tensor([0]), per_sample_weights=torch.ones(3))

    def test_input_dims(self):
        emb = colo.torch.EmbeddingBag(5, 2, mode="sum", name="dims")
        with self.assertRaisesRegex(colo.ColoValueError, r"EmbeddingBag 'dims': input of shape \(1, 1, 2\), want 2-D \(bags × indices\) or 1-D with offsets"):
            emb(torch.tensor([[[1, 2]]]))
        with self.assertRaisesRegex(colo.ColoValueError, r"input of shape \(\), want 2-D"):
            emb(torch.tensor(1))
        # torch's own refuses them too.
        with self.assertRaises(ValueError):
            torch.nn.EmbeddingBag(5, 2, mode="sum")(torch.tensor([[[1, 2]]]))

    def test_unsorted(self):
        with self.assertRaisesRegex(colo.ColoValueError, r"ascend without repeats: row 1 at index 1 follows 3"):
            self.t.pull(np.array([3, 1]))

    def test_declared_twice(self):
        with self.assertRaisesRegex(colo.ColoValueError, r'table "bad" declared again as 10 rows × 5, was 10 rows × 4'):
            colo.kv.table("bad", 10, 5)
        self.assertIs(colo.kv.table("bad", 10, 4), self.t)

    def test_rule_mismatch(self):
        with self.assertRaisesRegex(colo.ColoValueError, r"optimizer adagrad\(lr=0.1, eps=1e-10\), but the servers run sgd\(lr=0.1\)"):
            colo.kv.table("other", 10, 4, optimizer=colo.optim.Adagrad(0.1))
        with self.assertRaisesRegex(ValueError, r"weight_decay"):
            colo.optim.from_torch(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, weight_decay=0.1))

    def test_init_twice(self):
        with self.assertRaisesRegex(colo.ColoError, r"colo.init\(\) was already called"):
            colo.init(local=True)

    def test_fork_guard(self):
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                colo.rank()
            except colo.ForkError as e:
                code = 0 if 'multiprocessing_context="spawn"' in str(e) else 4
            except BaseException:
                code = 5
            os._exit(code)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                self.fail("the forked child hung calling colo instead of raising ForkError")
            time.sleep(0.01)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, "child did not raise ForkError naming the spawn context")

    def test_dataloader_workers(self):
        class Plain(torch.utils.data.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                return torch.tensor([i])

        class Touching(Plain):
            def __getitem__(self, i):
                return torch.tensor([colo.rank()])

        # Forked workers that only read data work beside colo.
        got = sorted(int(b) for b in torch.utils.data.DataLoader(Plain(), batch_size=1, num_workers=2))
        self.assertEqual(got, list(range(8)))
        # Forked workers that call colo get ForkError, not a hang.
        with self.assertRaisesRegex(Exception, r"multiprocessing_context=\"spawn\""):
            list(torch.utils.data.DataLoader(Touching(), batch_size=1, num_workers=1, timeout=60))

    def test_placed_sampler(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "data.part"), "w") as f:
                f.write("0\n0\n0\n0\n0\n")
            s = colo.torch.PlacedSampler(5, placement=d, shuffle=False)
            self.assertEqual(list(s), [0, 1, 2, 3, 4])
            with self.assertRaisesRegex(colo.ColoValueError, r"data.part has 5 lines for 6 samples"):
                colo.torch.PlacedSampler(6, placement=d)
            with open(os.path.join(d, "data.part"), "w") as f:
                f.write("0\nx\n")
            with self.assertRaisesRegex(colo.ColoValueError, r"data.part:2: 'x': want a machine number"):
                colo.torch.PlacedSampler(2, placement=d)


class SumRule(unittest.TestCase):
    """colo.init(local=True) without an optimizer (and colo run without
    --rule) has the servers sum what is pushed: a layer's gradients summed
    into its rows climb the loss, so the layers refuse it."""

    def setUp(self):
        colo.init(local=True)

    def tearDown(self):
        colo.shutdown()

    def test_layers_refuse_sum(self):
        for make in (lambda: colo.torch.EmbeddingBag(10, 4), lambda: colo.torch.Embedding(10, 4)):
            with self.assertRaisesRegex(colo.ColoValueError, r"the servers run sum \(w \+= g\).*optimizer=colo.optim.SGD\(0.1\)"):
                make()
        # Asked for, the sums are pushed; raw tables are accumulators.
        emb = colo.torch.EmbeddingBag(10, 4, mode="sum", optimizer=colo.optim.Sum(), init=colo.kv.zeros())
        emb(torch.tensor([[1, 2]])).sum().backward()
        colo.torch.synchronize()
        np.testing.assert_array_equal(emb.weight_of(torch.tensor([1, 2, 3])).numpy(), [[1] * 4, [1] * 4, [0] * 4])
        colo.kv.table("acc", 10, 4)


class Library(unittest.TestCase):
    """A COLO_LIBRARY that is missing, a directory or not a library: a
    ColoError naming it, and how to build the library."""

    def run_with(self, path):
        env = dict(os.environ, COLO_LIBRARY=path)
        code = "import colo\ntry:\n    colo.init(local=True)\nexcept colo.ColoError as e:\n    print(e)\n"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def test_bad_library_path(self):
        with tempfile.TemporaryDirectory() as d:
            text = os.path.join(d, "libcolo.so")
            with open(text, "w") as f:
                f.write("not a library\n")
            for path, want in [(os.path.join(d, "missing.so"), "no such file"), (d, "a directory, want the file libcolo.so"),
                               (text, "cannot be loaded: .+")]:
                self.assertRegex(self.run_with(path), r"colo's C library \(COLO_LIBRARY=%s\): %s; point COLO_LIBRARY at .*go build -buildmode=c-shared" % (re.escape(path), want))


class Examples(unittest.TestCase):
    """The examples as a new user runs them: without ../shared/data,
    20 Newsgroups comes from the repository's copy, and the others name
    the folder they looked in and --data."""

    EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "torch")

    def run_example(self, name, *args):
        env = dict(os.environ, COLO_DATA=os.path.join(tempfile.gettempdir(), "colo-no-data"))
        for k in ("COLO_SCHEDULER", "DMLC_PS_ROOT_URI", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
            env.pop(k, None)
        return subprocess.run([sys.executable, os.path.join(self.EXAMPLES, name)] + list(args), env=env,
                              capture_output=True, text=True, timeout=300)

    def test_newsgroups_shipped_data(self):
        out = self.run_example("newsgroups.py", "--epochs", "1")
        self.assertEqual(out.returncode, 0, out.stderr)
        acc = float(re.search(r"epoch 1 .* test accuracy (\S+)", out.stdout).group(1))
        self.assertGreater(acc, 0.7, out.stdout)

    def test_missing_data(self):
        for name, what in [("fashion_mlp.py", "Fashion-MNIST"), ("ego_facebook.py", "ego-Facebook")]:
            out = self.run_example(name, "--epochs", "1")
            self.assertEqual(out.returncode, 1, out.stderr)
            self.assertRegex(out.stderr, r"%s: no %s in .*colo-no-data/\S+ \(.*missing\): pass --data DIR" % (name, what))
            self.assertNotIn("Traceback", out.stderr)


class NoCluster(unittest.TestCase):
    def test_scheduler_absent(self):
        t0 = time.monotonic()
        with self.assertRaisesRegex(colo.ColoError, r"127.0.0.1:1"):
            colo.init(scheduler="127.0.0.1:1", timeout=1)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertFalse(colo.is_initialized())

    def test_no_environment(self):
        env = {k: v for k, v in os.environ.items() if k.startswith(("COLO_SCHEDULER", "DMLC_"))}
        for k in env:
            del os.environ[k]
        try:
            with self.assertRaisesRegex(colo.ColoValueError, r"COLO_SCHEDULER .* is not set"):
                colo.init()
        finally:
            os.environ.update(env)

    def test_not_initialized(self):
        with self.assertRaisesRegex(colo.ColoError, r"call colo.init\(\) first"):
            colo.rank()


if __name__ == "__main__":
    unittest.main()
