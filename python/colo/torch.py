"""PyTorch layers and an optimizer whose parameters live on colo's servers.

* ``EmbeddingBag(num_embeddings, embedding_dim, mode="sum"|"mean", optimizer=…)``
  and ``Embedding(num_embeddings, embedding_dim, optimizer=…)`` are drop-in
  for torch.nn's in ``forward``: the forward pulls the rows the batch
  touches (its unique indices), the backward pushes their gradients, and
  the servers apply the optimizer. There is no local weight and nothing to
  give a local optimizer.
* ``DistributedOptimizer(optimizer, named_parameters=…)`` keeps dense
  parameters on the servers: at construction every worker takes rank 0's
  initial values; in backward each gradient is pushed as soon as it is
  ready (a hook per parameter); ``step()`` waits for the pushes and pulls
  the new values into the parameters. The torch optimizer only names the
  rule (SGD, SGD with momentum, Adagrad, Adam): the servers run it.
* ``PlacedSampler(dataset_size, placement=DIR)`` yields the indices of the
  samples colo's partitioner placed on this worker (DIR/data.part).

Gradients are averaged over the workers (multiplied by 1/size() before
they are pushed, as DistributedDataParallel averages them), so that under
BSP K workers with batches of b samples train the model one process
trains on their union (K·b samples, mean loss). Pass ``average=False`` to
push sums.

Every push ends the worker's round (see colo.kv); every worker must run
the same model, so that the pushes of a step come in the same order.
"""

import os

import numpy as np
import torch
import torch.nn.functional as F

import colo
from . import checkpoint as _ckpt
from . import kv as _kv
from . import optim as _optim
from ._lib import ColoValueError

__all__ = ["EmbeddingBag", "Embedding", "DistributedOptimizer", "PlacedSampler", "synchronize"]

_pending = []  # tickets of pushes made in backward, with their tensors
_NO_ROWS, _NO_VALUES = torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.float32)


def synchronize():
    """Wait for every push made by the layers' backward passes."""
    global _pending
    ps, _pending = _pending, []
    for t in ps:
        t.wait()


def _indices(x, name):
    if not isinstance(x, torch.Tensor):
        raise ColoValueError("%s: %s, want a tensor of int64 indices" % (name, type(x).__name__))
    if x.dtype not in (torch.int64, torch.int32):
        raise ColoValueError("%s: a tensor of %s, want int64 (or int32) indices" % (name, x.dtype))
    if x.device.type != "cpu":
        raise ColoValueError("%s: a tensor on %s, want one on the CPU" % (name, x.device))
    return x


class _PullRows(torch.autograd.Function):
    """Rows of a table as a tensor whose gradient is pushed to them: the
    general path (EmbeddingBag's max mode, per_sample_weights that
    require grad), where torch's own functions run on the pulled rows."""

    @staticmethod
    def forward(ctx, anchor, table, rows, scale):
        out = torch.empty((rows.numel(), table.dim), dtype=torch.float32)
        table._pull_owned(rows, out)
        ctx.table, ctx.rows, ctx.scale = table, rows, scale
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad
        if ctx.scale != 1.0:
            g = g * ctx.scale
        g = g.to(torch.float32).contiguous()
        _pending.append(ctx.table._push_owned(ctx.rows, g))
        return None, None, None, None


def _row_grads(inv, per_index, rows, dim):
    """The gradient of each distinct row: the sum of the gradients of the
    indices that name it (inv[i] is index i's row, per_index[i] its
    gradient). index_put_ with accumulate costs a fifth of torch's own
    embedding (bag) backward on the CPU, which sorts the indices."""
    g = torch.zeros((rows, dim), dtype=torch.float32)
    return g.index_put_((inv,), per_index, accumulate=True)


class _Bag(torch.autograd.Function):
    """EmbeddingBag (sum or mean) over a table's distinct rows ``uniq``:
    the forward pulls them and sums each bag (torch.embedding_bag on the
    pulled rows, ``inv`` indexing them); the backward spreads each bag's
    gradient over its indices, sums it per row and pushes it, one
    autograd node for the pull, the bags and the push."""

    @staticmethod
    def forward(ctx, anchor, table, uniq, inv, offsets, counts, weights, mean, scale):
        w = torch.empty((uniq.numel(), table.dim), dtype=torch.float32)
        table._pull_owned(uniq, w)
        out = torch.embedding_bag(w, inv, offsets, False, 1 if mean else 0, False, weights, False)[0]
        ctx.table, ctx.uniq, ctx.inv, ctx.counts, ctx.weights, ctx.mean, ctx.scale = table, uniq, inv, counts, weights, mean, scale
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.to(torch.float32)
        if ctx.mean:
            g = g / ctx.counts.clamp(min=1).unsqueeze(1).to(torch.float32)
        if ctx.scale != 1.0:
            g = g * ctx.scale
        per = g.repeat_interleave(ctx.counts, dim=0)  # each index's bag's gradient
        if ctx.weights is not None:
            per.mul_(ctx.weights.unsqueeze(1))
        gw = _row_grads(ctx.inv, per, ctx.uniq.numel(), ctx.table.dim)
        _pending.append(ctx.table._push_owned(ctx.uniq, gw))
        return None, None, None, None, None, None, None, None, None


class _Lookup(torch.autograd.Function):
    """Embedding over a table's distinct rows ``uniq``: the forward pulls
    them and gathers them for each index; the backward sums each row's
    gradient and pushes it."""

    @staticmethod
    def forward(ctx, anchor, table, uniq, inv, scale):
        w = torch.empty((uniq.numel(), table.dim), dtype=torch.float32)
        table._pull_owned(uniq, w)
        ctx.table, ctx.uniq, ctx.inv, ctx.scale = table, uniq, inv, scale
        return w.index_select(0, inv.reshape(-1)).reshape(inv.shape + (table.dim,))

    @staticmethod
    def backward(ctx, grad):
        g = grad.to(torch.float32).reshape(-1, ctx.table.dim)
        if ctx.scale != 1.0:
            g = g * ctx.scale
        gw = _row_grads(ctx.inv.reshape(-1), g, ctx.uniq.numel(), ctx.table.dim)
        _pending.append(ctx.table._push_owned(ctx.uniq, gw))
        return None, None, None, None, None


def _refuse_sum(layer):
    """Raise ColoValueError when the servers' rule is known to be sum
    (w += g, colo.init(local=True)'s and colo run's default): a layer
    pushes gradients, which summed into its rows climb the loss."""
    rule = colo.info().get("rule") or {}
    if rule.get("name") == "sum":
        raise ColoValueError(
            "%s: the servers run sum (w += g), which adds the gradients this layer pushes to its rows "
            "and so climbs the loss: give the servers a training rule, colo.init(local=True, "
            "optimizer=colo.optim.SGD(0.1)) or colo run --rule sgd --lr 0.1 (the layer's optimizer= "
            "checks it), or pass optimizer=colo.optim.Sum() to push gradients into sums on purpose" % layer)


class _Rows(torch.nn.Module):
    def __init__(self, num_embeddings, embedding_dim, optimizer, name, init, placed, average):
        super().__init__()
        if int(num_embeddings) < 1 or int(embedding_dim) < 1:
            raise ColoValueError("%s: num_embeddings %r and embedding_dim %r must be positive" % (type(self).__name__, num_embeddings, embedding_dim))
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if optimizer is None:
            _refuse_sum(type(self).__name__)
        if name is None:
            name = _kv._auto_name(type(self).__name__)
        if init is None:
            init = _kv.normal(0.0, 1.0, seed=0)  # torch.nn.Embedding's N(0, 1)
        self.table = _kv.table(name, self.num_embeddings, self.embedding_dim, init=init, optimizer=optimizer, placed=placed)
        self.average = average
        # A leaf that requires grad, so that autograd calls _PullRows.backward.
        self._anchor = torch.empty(0, requires_grad=True)

    def _scale(self):
        return 1.0 / colo.size() if self.average else 1.0

    def _distinct(self, input):
        """The distinct rows of input, ascending, and each index's place
        among them (flat), once the layers' earlier pushes are done."""
        flat = input.reshape(-1).to(torch.int64).contiguous()
        try:
            uniq, inv = self.table.unique(flat)
        except colo.ColoIndexError as e:
            raise colo.ColoIndexError("%s %r: %s" % (type(self).__name__, self.table.name, e)) from None
        synchronize()
        return uniq, inv

    def _rows(self, input):
        uniq, inv = self._distinct(input)
        w = _PullRows.apply(self._anchor, self.table, uniq, self._scale())
        return w, inv.reshape(input.shape)

    def weight_of(self, rows):
        """Return the current values of ``rows`` (a tensor of indices) as a
        (len(rows), dim) tensor, without gradient."""
        rows = _indices(rows, "rows").to(torch.int64).reshape(-1)
        uniq, inv = torch.unique(rows, sorted=True, return_inverse=True)
        out = torch.empty((uniq.numel(), self.embedding_dim), dtype=torch.float32)
        self.table.pull(uniq, out)
        return out[inv]

    def initial_weight(self):
        """Return the table's initial values, all rows (for tests and
        checks; it is the whole table)."""
        rows = torch.arange(self.num_embeddings, dtype=torch.int64)
        return torch.from_numpy(self.table.initial(rows.numpy()))

    def extra_repr(self):
        return "%d, %d, table=%r" % (self.num_embeddings, self.embedding_dim, self.table.name)


class EmbeddingBag(_Rows):
    """torch.nn.EmbeddingBag whose weight lives on colo's servers.

    ``EmbeddingBag(num_embeddings, embedding_dim, mode="sum", optimizer=None,
    name=None, init=None, placed=False, average=True)``. ``forward(input,
    offsets=None, per_sample_weights=None)`` takes what torch's does: a 2-D
    (bags × length) tensor of indices, or a 1-D one with ``offsets``.
    ``optimizer`` is the rule the servers run (a colo.optim rule or a torch
    optimizer): ColoValueError when they run another, and, without it,
    when they are known to sum (colo.init(local=True) or colo run without
    --rule), which would climb the loss; ``init`` the rows' initial values (default normal(0, 1),
    torch's; colo.kv.zeros() for a linear model); ``name`` the table's name
    (workers must agree); ``placed=True`` keys row r as the placement's
    parameter r (colo run --placement).
    """

    def __init__(self, num_embeddings, embedding_dim, mode="mean", optimizer=None, name=None, init=None, placed=False, average=True):
        if mode not in ("sum", "mean", "max"):
            raise ColoValueError("EmbeddingBag: mode %r: sum, mean or max" % (mode,))
        self.mode = mode
        super().__init__(num_embeddings, embedding_dim, optimizer, name, init, placed, average)

    def forward(self, input, offsets=None, per_sample_weights=None):
        _indices(input, "EmbeddingBag %r: input" % self.table.name)
        if input.dim() not in (1, 2):
            raise ColoValueError("EmbeddingBag %r: input of shape %s, want 2-D (bags × indices) or 1-D with offsets, "
                                 "as torch.nn.EmbeddingBag" % (self.table.name, tuple(input.shape)))
        if offsets is not None:
            _indices(offsets, "EmbeddingBag %r: offsets" % self.table.name)
        if input.dim() == 2 and offsets is not None:
            raise ColoValueError("EmbeddingBag %r: offsets with a 2-D input; torch wants offsets None then" % self.table.name)
        if input.dim() == 1 and offsets is None:
            raise ColoValueError("EmbeddingBag %r: a 1-D input needs offsets" % self.table.name)
        if self.mode == "max" or (per_sample_weights is not None and per_sample_weights.requires_grad):
            # torch's own function on the pulled rows, its own backward.
            w, inv = self._rows(input)
            return F.embedding_bag(inv, w, offsets, mode=self.mode, per_sample_weights=per_sample_weights)
        weights = None
        if per_sample_weights is not None:
            weights = self._weights(input, per_sample_weights)
        n = input.numel()
        if input.dim() == 2:
            bags, length = input.shape
            offsets = torch.arange(0, n, length) if length > 0 else torch.zeros(bags, dtype=torch.int64)
            counts = torch.full((bags,), length, dtype=torch.int64)
        else:
            offsets = offsets.to(torch.int64).reshape(-1)
            if offsets.numel() == 0:
                raise ColoValueError("EmbeddingBag %r: offsets is empty, want one offset per bag" % self.table.name)
            counts = torch.diff(offsets, append=offsets.new_tensor([n]))
            if offsets[0].item() != 0 or bool((counts < 0).any()):
                raise ColoValueError("EmbeddingBag %r: offsets %s: want ascending offsets from 0 to at most len(input) %d" % (self.table.name, _short(offsets), n))
        uniq, inv = self._distinct(input)
        return _Bag.apply(self._anchor, self.table, uniq, inv, offsets, counts, weights, self.mode == "mean", self._scale())

    def _weights(self, input, w):
        q = "EmbeddingBag %r: per_sample_weights" % self.table.name
        if not isinstance(w, torch.Tensor):
            raise ColoValueError("%s: %s, want a tensor" % (q, type(w).__name__))
        if self.mode != "sum":
            raise ColoValueError("%s: only with mode 'sum' (torch's rule), not %r" % (q, self.mode))
        if w.shape != input.shape:
            raise ColoValueError("%s of shape %s, want the input's %s" % (q, tuple(w.shape), tuple(input.shape)))
        if w.dtype != torch.float32 or w.device.type != "cpu":
            raise ColoValueError("%s: %s on %s, want float32 on the CPU" % (q, w.dtype, w.device))
        return w.reshape(-1)


def _short(t):
    """t's values for an error message, the first few."""
    v = t.tolist()
    return str(v) if len(v) <= 8 else "[%s, …] (%d values)" % (", ".join(map(str, v[:8])), len(v))


class Embedding(_Rows):
    """torch.nn.Embedding whose weight lives on colo's servers.

    ``Embedding(num_embeddings, embedding_dim, optimizer=None, name=None,
    init=None, placed=False, average=True)``; ``forward(input)`` takes a
    tensor of indices of any shape and returns input.shape + (dim,).
    """

    def __init__(self, num_embeddings, embedding_dim, optimizer=None, name=None, init=None, placed=False, average=True):
        super().__init__(num_embeddings, embedding_dim, optimizer, name, init, placed, average)

    def forward(self, input):
        _indices(input, "Embedding %r: input" % self.table.name)
        uniq, inv = self._distinct(input)
        return _Lookup.apply(self._anchor, self.table, uniq, inv.reshape(input.shape), self._scale())


class DistributedOptimizer:
    """Dense parameters on colo's servers, under the rule of a torch optimizer.

    ``DistributedOptimizer(optimizer, named_parameters=None, average=True,
    prefix="")``: ``optimizer`` is a torch.optim SGD (with momentum or
    not), Adagrad or Adam; its hyperparameters become the servers' rule
    (which must be the cluster's). ``named_parameters`` (default: the
    optimizer's parameters, named by position) decide the tables' names,
    which every worker must share. At construction every parameter takes
    rank 0's values. In backward each parameter's gradient is pushed as
    soon as autograd produces it; ``step()`` waits for the pushes and
    pulls every parameter's new value. ``zero_grad()`` is the optimizer's.
    A parameter that got no gradient in a step makes an empty push in
    ``step()`` (no keys: it ends the worker's round and changes nothing),
    so that every worker pushes as many times a step (under BSP the
    workers' rounds must agree) while the servers, as torch's optimizers,
    leave a parameter no worker has a gradient for alone (Adam's moments
    and step count included); one that some workers have a gradient for
    moves by their sum, as DistributedDataParallel's average of the
    gradients with zeros for the others.
    """

    def __init__(self, optimizer, named_parameters=None, average=True, prefix=""):
        self.optimizer = optimizer
        self.rule = _optim.from_torch(optimizer)
        if named_parameters is None:
            params = [p for g in optimizer.param_groups for p in g["params"]]
            named = [("param.%d" % i, p) for i, p in enumerate(params)]
        else:
            named = list(named_parameters)
            mine = {id(p) for g in optimizer.param_groups for p in g["params"]}
            named = [(n, p) for n, p in named if id(p) in mine]
        self._params = []
        self.average = average
        for name, p in named:
            if not p.requires_grad:
                continue
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise ColoValueError("DistributedOptimizer: parameter %r is %s on %s, want float32 on the CPU" % (name, p.dtype, p.device))
            t = _kv.dense(prefix + name, p.numel(), optimizer=self.rule)
            init = self._broadcast(p.detach().reshape(-1))
            with torch.no_grad():
                p.copy_(init.reshape(p.shape))
            disp = torch.zeros(p.numel(), dtype=torch.float32)
            self._params.append((name, p, t, init, disp))
        # A table of no use but its empty pushes, which end a round.
        self._round = _kv.table(prefix + "DistributedOptimizer.round", 1, 1)
        self._tickets = []
        self._pushed = set()  # the tables pushed since the last step
        self._hooks = [p.register_hook(self._hook(p, t)) for _, p, t, _, _ in self._params]
        # The servers hold displacements from the starting values: a
        # checkpoint keeps those values too (colo.save, colo.load).
        _ckpt.register(prefix + "DistributedOptimizer", self)

    def _colo_state(self):
        return {t.name: init.numpy().copy() for _, _, t, init, _ in self._params}

    def _colo_load(self, saved):
        for name, p, t, init, disp in self._params:
            x = saved.get(t.name)
            if x is None or x.shape != (p.numel(),):
                raise ColoValueError("colo.load: the checkpoint has no starting values of %d for parameter %r (table %r)" % (p.numel(), name, t.name))
            init.copy_(torch.from_numpy(x))
            t.pull(disp)
            with torch.no_grad():
                torch.add(init, disp, out=p.view(-1))

    @staticmethod
    def _broadcast(x):
        """Return rank 0's values of x on every worker."""
        if colo.size() == 1:
            return x.clone().contiguous()
        a = x.to(torch.float64).numpy().copy() if colo.rank() == 0 else np.zeros(x.numel())
        out = np.empty(x.numel(), dtype=np.float32)
        step = 1 << 16
        for i in range(0, x.numel(), step):
            out[i:i + step] = colo.allreduce(a[i:i + step])
        return torch.from_numpy(out)

    def _hook(self, p, table):
        def hook(grad):
            if self.average and colo.size() > 1:
                g = grad.detach() / colo.size()
            else:
                # A copy: autograd may keep grad as the parameter's .grad,
                # which zero_grad clears in place.
                g = grad.detach().clone()
            g = g.to(torch.float32).contiguous()
            self._tickets.append(table.push(g.reshape(-1)))
            self._pushed.add(table.name)
            return grad
        return hook

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none=False):
        """The torch optimizer's zero_grad."""
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def synchronize(self):
        """Wait for the gradients pushed since the last step."""
        ts, self._tickets = self._tickets, []
        for t in ts:
            t.wait()
        synchronize()

    def step(self, closure=None):
        """Wait for the pushes, then pull every parameter: its initial
        value plus the servers' displacement."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # A parameter that got no gradient this step (a branch not taken)
        # makes an empty push: every worker pushes as many times a step,
        # so that under BSP their rounds agree, and no key moves.
        for _, p, t, _, disp in self._params:
            if t.name not in self._pushed:
                self._tickets.append(self._round.push(_NO_ROWS, _NO_VALUES))
        self._pushed = set()
        self.synchronize()
        pulls = [t.pull(disp, wait=False) for _, _, t, _, disp in self._params]
        for k in pulls:
            k.wait()
        with torch.no_grad():
            for _, p, _, init, disp in self._params:
                torch.add(init, disp, out=p.view(-1))
        return loss

    def state_dict(self):
        return self.optimizer.state_dict()


class PlacedSampler(torch.utils.data.Sampler):
    """The indices of the samples colo's partitioner placed on this worker.

    ``PlacedSampler(dataset_size, placement=DIR, rank=None, shuffle=True,
    seed=0)`` reads DIR/data.part (one machine number per sample, as
    ``colo partition`` writes it) and yields the samples of machine
    ``rank`` (default colo.rank()), shuffled each epoch when ``shuffle``
    (set_epoch(e) as DistributedSampler). A file whose line count differs
    from dataset_size, or a line that is not a machine number, raises
    ColoValueError naming the file and line.
    """

    def __init__(self, dataset_size, placement, rank=None, shuffle=True, seed=0):
        path = os.path.join(placement, "data.part")
        try:
            with open(path) as f:
                lines = f.read().split("\n")
        except OSError as e:
            raise ColoValueError("PlacedSampler: placement %s: %s" % (placement, e))
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) != int(dataset_size):
            raise ColoValueError("PlacedSampler: %s has %d lines for %d samples" % (path, len(lines), dataset_size))
        parts = np.empty(len(lines), dtype=np.int64)
        for i, s in enumerate(lines):
            if not s.isdigit():
                raise ColoValueError("PlacedSampler: %s:%d: %r: want a machine number" % (path, i + 1, s))
            parts[i] = int(s)
        self.rank = colo.rank() if rank is None else int(rank)
        self.machines = int(parts.max()) + 1 if len(parts) else 0
        if colo.is_initialized() and self.machines > colo.size():
            raise ColoValueError("PlacedSampler: %s places samples on %d machines, the job has %d workers" % (path, self.machines, colo.size()))
        self.indices = np.nonzero(parts == self.rank)[0]
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __iter__(self):
        idx = self.indices
        if self.shuffle:
            g = np.random.default_rng((self.seed, self.epoch))
            idx = idx[g.permutation(len(idx))]
        return iter(idx.tolist())

    def __len__(self):
        return len(self.indices)
