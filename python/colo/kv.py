"""Raw pull and push of rows on colo's servers, on numpy arrays and torch
tensors, without copies.

    t = colo.kv.table("emb", rows=1000, dim=16, init=colo.kv.normal(seed=1))
    rows = np.array([3, 7, 42], dtype=np.int64)     # ascending, no repeats
    vals = t.pull(rows)                              # (3, 16) float32
    t.push(rows, grads).wait()                       # the servers apply their rule

    d = colo.kv.dense("bias", size=20)               # one vector of 20 values
    d.push(g).wait(); d.pull(out)

Rows are int64, values float32, both C-contiguous on the CPU (numpy arrays
or torch tensors); anything else raises ColoValueError naming the
argument. ``pull(..., wait=False)`` and ``push`` return a Ticket: the
arrays stay in use (and the Ticket keeps them alive) until ``wait()``.
Every push ends the worker's round: under BSP the next round's pulls see
every worker's pushes of this one.

A table's rows hold values that start at the table's ``init`` (zeros,
normal or uniform, a seeded function of the row that every worker
computes alike) and move by what the servers' rule does with the pushes.
Workers declare the same tables in the same order.
"""

import json
import sys

import numpy as np

from . import _lib
from . import optim as _optim
from ._lib import ColoValueError

_tables = {}
_auto = {}  # prefix → the next number of the session's unnamed tables


def _forget_tables():
    for t in list(_tables.values()):
        t._handle = None
    _tables.clear()
    _auto.clear()


def _auto_name(prefix):
    """Return prefix.N, N counting the session's unnamed tables of that
    prefix from 0: a program that builds the same model names its tables
    alike in every run (which checkpoints rely on)."""
    n = _auto.get(prefix, 0)
    _auto[prefix] = n + 1
    return "%s.%d" % (prefix, n)


def zeros():
    """Initial values 0."""
    return {"name": "zeros"}


def normal(mean=0.0, std=1.0, seed=0):
    """Initial values drawn from N(mean, std²), a seeded function of the row."""
    return {"name": "normal", "mean": float(mean), "std": float(std), "seed": int(seed)}


def uniform(low, high, seed=0):
    """Initial values drawn from U[low, high), a seeded function of the row."""
    return {"name": "uniform", "low": float(low), "high": float(high), "seed": int(seed)}


def _array(x, dtype, name, writable=False):
    """Return (pointer, number of elements, keepalive) of x, which must be
    a C-contiguous CPU array of dtype; raise ColoValueError otherwise."""
    torch = sys.modules.get("torch")  # a tensor means torch is imported
    if torch is not None and isinstance(x, torch.Tensor):
        want = {np.int64: torch.int64, np.float32: torch.float32}[dtype]
        if x.dtype != want:
            raise ColoValueError("%s: a tensor of %s, want %s" % (name, x.dtype, want))
        if x.device.type != "cpu":
            raise ColoValueError("%s: a tensor on %s, want one on the CPU" % (name, x.device))
        if not x.is_contiguous():
            raise ColoValueError("%s: a non-contiguous tensor of shape %s, want a contiguous one (call .contiguous())" % (name, tuple(x.shape)))
        if x.requires_grad and writable:
            raise ColoValueError("%s: a tensor that requires grad; pass its .data or a detached tensor" % name)
        return x.data_ptr(), x.numel(), x
    if isinstance(x, np.ndarray):
        if x.dtype != dtype:
            raise ColoValueError("%s: an array of %s, want %s" % (name, x.dtype, np.dtype(dtype)))
        if not x.flags.c_contiguous:
            raise ColoValueError("%s: a non-contiguous array of shape %s, want a C-contiguous one (np.ascontiguousarray)" % (name, x.shape))
        if writable and not x.flags.writeable:
            raise ColoValueError("%s: a read-only array" % name)
        return x.ctypes.data, x.size, x
    raise ColoValueError("%s: %s, want a numpy array or a torch tensor of %s" % (name, type(x).__name__, np.dtype(dtype)))


class Ticket:
    """An asynchronous pull or push: wait() for it. It keeps the arrays
    of the call alive until then."""

    __slots__ = ("_h", "_keep", "_result", "_done")

    def __init__(self, h, keep, result=None):
        self._h, self._keep, self._result, self._done = h, keep, result, False

    def wait(self):
        """Wait for the call; return the pulled array (a pull) or None. A
        second wait returns at once."""
        if not self._done:
            self._done = True
            try:
                _lib.call("colo_wait", self._h)
            finally:
                self._keep = None
        return self._result

    def poll(self):
        """Return whether wait() would return at once."""
        if self._done:
            return True
        return _lib.call("colo_poll", self._h) == 1

    def __del__(self):
        # A ticket dropped unwaited must not leave its arrays to Go.
        if not self._done and self._keep is not None and not _lib._forked and _lib._lib is not None:
            try:
                _lib._lib.colo_wait(self._h)
            except Exception:
                pass


class Table:
    """A sparse table: ``rows`` × ``dim`` float32 values on the servers."""

    def __init__(self, handle, name, rows, dim, spec):
        self._handle, self.name, self.rows, self.dim, self.spec = handle, name, rows, dim, spec

    def _h(self):
        if self._handle is None:
            raise _lib.ColoError("table %r: its session was shut down" % self.name)
        return self._handle

    def pull(self, rows, out=None, wait=True):
        """Pull ``rows`` (int64, ascending, no repeats) into ``out``
        (float32, len(rows)·dim values; a new (n, dim) numpy array when
        None). Returns out, or a Ticket whose wait() returns it."""
        rp, n, rk = _array(rows, np.int64, "table %r: rows" % self.name)
        if out is None:
            out = np.empty((n, self.dim), dtype=np.float32)
        op, m, ok = _array(out, np.float32, "table %r: out" % self.name, writable=True)
        if m != n * self.dim:
            raise ColoValueError("table %r: out has %d values for %d rows of dim %d, want %d" % (self.name, m, n, self.dim, n * self.dim))
        if wait:
            _lib.call("colo_pull_wait", self._h(), rp, n, op, m)
            return out
        h = _lib.call("colo_pull", self._h(), rp, n, op, m)
        return Ticket(h, (rk, ok), out)

    def push(self, rows, values):
        """Push ``values`` (float32, len(rows)·dim) to ``rows`` (int64,
        ascending, no repeats); the servers apply their rule. Returns a
        Ticket."""
        rp, n, rk = _array(rows, np.int64, "table %r: rows" % self.name)
        vp, m, vk = _array(values, np.float32, "table %r: values" % self.name)
        if m != n * self.dim:
            raise ColoValueError("table %r: values has %d values for %d rows of dim %d, want %d" % (self.name, m, n, self.dim, n * self.dim))
        h = _lib.call("colo_push", self._h(), rp, n, vp, m)
        return Ticket(h, (rk, vk))

    def _pull_owned(self, rows, out):
        """pull(rows, out) of tensors the caller made and owns: rows
        contiguous int64, out contiguous float32 of len(rows)·dim values
        (the layers' own; nothing is checked, the Go side checks the
        rows)."""
        _lib.call("colo_pull_wait", self._h(), rows.data_ptr(), rows.numel(), out.data_ptr(), out.numel())

    def _push_owned(self, rows, values):
        """push(rows, values) of tensors the caller made, as _pull_owned."""
        h = _lib.call("colo_push", self._h(), rows.data_ptr(), rows.numel(), values.data_ptr(), values.numel())
        return Ticket(h, (rows, values))

    def unique(self, idx):
        """Return the distinct rows of ``idx`` (a contiguous int64 tensor),
        ascending, and for each index its position among them: what
        torch.unique(idx, sorted=True, return_inverse=True) returns, in
        O(len(idx) + rows/64), with rows out of range refused."""
        import torch

        n = idx.numel()
        uniq = torch.empty(n, dtype=torch.int64)
        inv = torch.empty(n, dtype=torch.int64)
        k = _lib.call("colo_unique", self._h(), idx.data_ptr(), n, uniq.data_ptr(), inv.data_ptr())
        return uniq[:k], inv

    def initial(self, rows, out=None):
        """Return the initial values of ``rows`` (int64, any order)."""
        rp, n, rk = _array(rows, np.int64, "table %r: rows" % self.name)
        if out is None:
            out = np.empty((n, self.dim), dtype=np.float32)
        op, m, ok = _array(out, np.float32, "table %r: out" % self.name, writable=True)
        _lib.call("colo_init_rows", self._h(), rp, n, op, m)
        return out

    def __repr__(self):
        return "colo.kv.Table(%r, rows=%d, dim=%d)" % (self.name, self.rows, self.dim)


class DenseTable:
    """A dense table: one vector of ``size`` float32 values on the servers,
    starting at zero."""

    def __init__(self, handle, name, size):
        self._handle, self.name, self.size = handle, name, size

    _h = Table._h

    def pull(self, out=None, wait=True):
        """Pull the vector into ``out`` (float32, size values; a new array
        when None). Returns out, or a Ticket whose wait() returns it."""
        if out is None:
            out = np.empty(self.size, dtype=np.float32)
        op, m, ok = _array(out, np.float32, "table %r: out" % self.name, writable=True)
        if m != self.size:
            raise ColoValueError("table %r: out has %d values, want %d" % (self.name, m, self.size))
        t = Ticket(_lib.call("colo_pull_all", self._h(), op, m), ok, out)
        return t.wait() if wait else t

    def push(self, values):
        """Push ``values`` (float32, size values). Returns a Ticket."""
        vp, m, vk = _array(values, np.float32, "table %r: values" % self.name)
        if m != self.size:
            raise ColoValueError("table %r: values has %d values, want %d" % (self.name, m, self.size))
        return Ticket(_lib.call("colo_push_all", self._h(), vp, m), vk)

    def __repr__(self):
        return "colo.kv.DenseTable(%r, size=%d)" % (self.name, self.size)


def _declare(spec):
    import colo

    h = _lib.call("colo_table", colo.session(), json.dumps(spec).encode())
    return h


def table(name, rows, dim, init=None, optimizer=None, placed=False):
    """Declare (or find again) the sparse table ``name`` of ``rows`` ×
    ``dim`` values. ``init`` is zeros() (the default), normal(…) or
    uniform(…). ``optimizer``, when given, is the rule the table expects
    of the servers (a colo.optim rule or a torch optimizer): ColoValueError
    when the cluster runs another. ``placed=True`` keys row r as the
    placement's parameter r, so that it lives on the server colo's
    partitioner chose (``colo run --placement``). Declaring a name again
    with another shape raises ColoValueError."""
    if not isinstance(name, str) or not name:
        raise ColoValueError("table name: want a non-empty string, not %r" % (name,))
    rows, dim = int(rows), int(dim)
    spec = {"name": name, "rows": rows, "dim": dim, "placed": bool(placed), "init": init or zeros()}
    rule = _optim.as_rule(optimizer)
    if rule is not None:
        spec["rule"] = rule.config()
    old = _tables.get(name)
    h = _declare(spec)
    if old is not None and old._handle is not None:
        return old
    t = Table(h, name, rows, dim, spec)
    _tables[name] = t
    return t


def dense(name, size, optimizer=None):
    """Declare (or find again) the dense table ``name`` of ``size`` values."""
    if not isinstance(name, str) or not name:
        raise ColoValueError("table name: want a non-empty string, not %r" % (name,))
    spec = {"name": name, "dense": True, "size": int(size)}
    rule = _optim.as_rule(optimizer)
    if rule is not None:
        spec["rule"] = rule.config()
    old = _tables.get(name)
    h = _declare(spec)
    if old is not None and old._handle is not None:
        return old
    t = DenseTable(h, name, int(size))
    _tables[name] = t
    return t


def wait(*tickets):
    """Wait for every ticket; return their results."""
    return [t.wait() for t in tickets]
