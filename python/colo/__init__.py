"""colo from Python: train PyTorch models whose embeddings and dense
parameters live on colo's parameter servers.

The package is pure Python over colo's C library (cmd/libcolo, loaded with
ctypes on first use). A program joins a cluster as one worker:

    import colo, colo.torch
    colo.init()                       # from colo run's environment
    emb = colo.torch.EmbeddingBag(num_features, 20, mode="sum",
                                  optimizer=colo.optim.Adagrad(0.1))
    ...
    colo.shutdown()

``colo.init()`` reads the cluster from the environment that ``colo run``
sets (COLO_SCHEDULER, COLO_TOKEN, COLO_RANK, COLO_RULE, …) or ps-lite's
DMLC_* variables; ``colo.init(scheduler="host:port", token=…)`` names it;
``colo.init(local=True, optimizer=…)`` starts a one-machine cluster inside
this process (a scheduler and a server beside this worker).

Modules: colo.kv (raw pull and push of rows on numpy arrays and torch
tensors), colo.torch (EmbeddingBag, Embedding, DistributedOptimizer,
PlacedSampler), colo.optim (the servers' update rules), colo.checkpoint
(colo.save and colo.load: checkpoints of the tables, for resuming).

Fork rule: only the process that called colo.init() may call colo; a
forked child (a DataLoader worker) gets ForkError. Use
``multiprocessing_context="spawn"`` for DataLoader workers that need colo.
"""

import atexit
import ctypes
import json
import threading

from . import optim
from ._lib import ColoError, ColoIndexError, ColoTimeoutError, ColoValueError, ForkError
from . import _lib

__all__ = [
    "init", "shutdown", "rank", "size", "servers", "barrier", "allreduce", "info",
    "is_initialized", "ColoError", "ColoValueError", "ColoIndexError", "ColoTimeoutError",
    "ForkError", "optim", "save", "load",
]

_state_lock = threading.Lock()
_session = None


def init(scheduler=None, token=None, rank=None, timeout=None, local=False, optimizer=None,
         consistency="bsp", tau=0):
    """Join the cluster as a worker and return once the job runs.

    With no arguments the cluster comes from the environment (``colo run``
    sets it; DMLC_* variables as ps-lite's launchers set them). Under
    ``mpirun`` or ``srun`` every rank is a machine (a server beside its
    worker) whose server runs ``optimizer``, and rank 0 also hosts the
    scheduler (at COLO_SCHEDULER, or 127.0.0.1:7070 on one host) under
    ``consistency``. ``scheduler`` ("host:port"), ``token`` and ``rank``
    override the environment. ``optimizer``, when the servers' rule is
    known (colo run's job), must be that rule, or init raises
    ColoValueError. ``timeout`` bounds joining, in seconds: a scheduler that is not
    there raises ColoTimeoutError (or ColoError naming it) after at most
    that long; None takes COLO_JOIN_TIMEOUT (``colo run --join-timeout``
    sets it), or else 60 s. ``local=True`` starts a cluster in this process instead: a
    scheduler and one server beside this worker, running ``optimizer``
    (a colo.optim rule or a torch optimizer; None: colo.optim.Sum(),
    w += g, for colo.kv's accumulators, which colo.torch's layers refuse)
    under ``consistency`` ("bsp", "async" or "bounded" with ``tau``).

    Calling init() twice without shutdown() raises ColoError.
    """
    global _session
    with _state_lock:
        if _session is not None:
            raise ColoError("colo.init() was already called in this process; call colo.shutdown() before calling it again")
        cfg = {"rank": -1 if rank is None else int(rank)}
        if timeout is not None:
            if not (float(timeout) > 0):
                raise ValueError("colo.init: timeout=%r: want a positive number of seconds" % (timeout,))
            cfg["timeout"] = float(timeout)
        if local:
            rule = optim.as_rule(optimizer) or optim.Sum()
            cfg["local"] = {"consistency": consistency, "tau": int(tau), "rule": rule.config()}
            if scheduler is not None:
                raise ValueError("colo.init: local=True starts its own scheduler; do not pass scheduler=%r" % (scheduler,))
        else:
            if optimizer is not None:
                cfg["expect"] = optim.as_rule(optimizer).config()
            cfg["consistency"], cfg["tau"] = consistency, int(tau)
            if scheduler is not None:
                cfg["scheduler"] = str(scheduler)
            if token is not None:
                cfg["token"] = str(token)
        h = _lib.call("colo_open", json.dumps(cfg).encode())
        _session = h
        return h


def is_initialized():
    """Return whether colo.init() was called (and not shut down)."""
    return _session is not None


def _h():
    s = _session
    if s is None:
        if _lib._forked:
            raise _lib._fork_error()
        raise ColoError("colo is not initialized: call colo.init() first")
    return s


def session():
    """Return the session handle (for colo.kv and colo.torch)."""
    return _h()


def rank():
    """Return this worker's rank, in [0, size())."""
    return _lib.call("colo_rank", _h())


def size():
    """Return the number of workers."""
    return _lib.call("colo_size", _h())


def servers():
    """Return the number of servers."""
    return _lib.call("colo_servers", _h())


def info():
    """Return the session's facts: rank, size, servers, consistency, the
    servers' rule when known, and the process that holds the session."""
    buf = ctypes.create_string_buffer(4096)
    _lib.call("colo_info", _h(), buf, len(buf))
    return json.loads(buf.value.decode())


def barrier():
    """Wait until every worker reached this barrier."""
    _lib.call("colo_barrier", _h())


def allreduce(values):
    """Return the element-wise sum over the workers of a float64 numpy
    array (or a list), added in rank order: the same on every worker."""
    import numpy as np

    a = np.array(values, dtype=np.float64, copy=True).reshape(-1)
    _lib.call("colo_allreduce", _h(), a.ctypes.data, a.size)
    return a


def shutdown(timeout=None):
    """Leave the job: report this worker done and wait until every worker
    is (``timeout`` seconds at most, None for no bound). Raises the job's
    error, if it failed. Tables and tickets of the session are gone."""
    global _session
    with _state_lock:
        s = _session
        if s is None:
            return
        _session = None
        from . import kv as _kv

        _kv._forget_tables()
        from . import checkpoint as _ckpt

        _ckpt._forget()
        _lib.call("colo_close", s, 0.0 if timeout is None else float(timeout))


def save(path, step, state=None):
    """Write a checkpoint of the tables (colo.checkpoint.save)."""
    from . import checkpoint

    return checkpoint.save(path, step, state)


def load(path, step=None, missing_ok=False):
    """Load a checkpoint of the tables (colo.checkpoint.load)."""
    from . import checkpoint

    return checkpoint.load(path, step, missing_ok)


def _at_exit():
    if _session is not None and not _lib._forked:
        try:
            shutdown(timeout=30.0)
        except ColoError:
            pass


atexit.register(_at_exit)
