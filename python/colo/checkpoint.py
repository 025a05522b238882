"""Checkpoints of the cluster's tables, for resuming a training job.

    colo.save(path, step, state=None)     # every worker, at the same point
    got = colo.load(path)                  # every worker, before training
    if got is not None:
        step, state = got

``save`` writes the checkpoint of ``step`` to the directory ``path``
(which every worker must see: one host, or a shared file system) in the
layout ``colo train`` writes: ``path/round-NNNNNNNNN/`` with one snapshot
per server (every row with its values and the servers' optimizer states:
AdaGrad's sums, Adam's moments and step counts), the program's state and
a MANIFEST of sizes and CRC-32C checksums written last. A checkpoint
without its MANIFEST, or with a file that does not match it, is not
loaded. ``state`` is any picklable object (rank 0's is kept: the epoch, a
data loader's position, local modules' ``state_dict()``).

``load`` installs the newest complete checkpoint of ``path`` (or the one
of ``step``) on the servers and returns ``(step, state)``, or None when
``missing_ok`` and ``path`` holds none. Every worker calls it after
declaring the tables (building the model and the DistributedOptimizer)
and before the first push: a checkpoint of other tables, shapes, servers
or optimizer is refused with ColoValueError saying what differs.
DistributedOptimizer's parameters get the values they had at the save,
whatever the new model was initialised to. Both are collective, like
barrier(): each waits for every worker.

Loading a checkpoint unpickles its state: load only checkpoints you
trust, as with torch.load.
"""

import ctypes
import glob
import os
import pickle
import weakref

from . import _lib
from ._lib import ColoValueError

# Objects whose own state goes with a checkpoint (DistributedOptimizer's
# starting values): name → object with _colo_state() and _colo_load(x).
_parts = weakref.WeakValueDictionary()


def register(name, obj):
    """Have obj's _colo_state() saved under name with every checkpoint,
    and given back to its _colo_load() by load. Names are unique."""
    old = _parts.get(name)
    if old is not None and old is not obj:
        raise ColoValueError("checkpoint part %r registered twice (two DistributedOptimizers with the same prefix?)" % name)
    _parts[name] = obj


def _forget():
    _parts.clear()


def save(path, step, state=None):
    """Write the checkpoint of ``step`` (an int ≥ 0) to directory
    ``path``, with ``state``; returns once every worker's part and the
    MANIFEST are written. See the module's documentation."""
    import colo

    path = os.fspath(path)
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ColoValueError("colo.save: step %r, want an int ≥ 0" % (step,))
    blob = b""
    if colo.rank() == 0:
        parts = {name: obj._colo_state() for name, obj in list(_parts.items())}
        blob = pickle.dumps({"state": state, "parts": parts}, protocol=pickle.HIGHEST_PROTOCOL)
    buf = ctypes.create_string_buffer(blob, len(blob)) if blob else None
    _lib.call("colo_save", colo.session(), path.encode(), step, buf, len(blob))


def _has_checkpoint(path):
    return bool(glob.glob(os.path.join(glob.escape(path), "round-*", "MANIFEST")))


def load(path, step=None, missing_ok=False):
    """Install the newest complete checkpoint of ``path`` (or the one of
    ``step``) and return ``(step, state)``; None when ``missing_ok`` and
    ``path`` holds no checkpoint. See the module's documentation."""
    import colo

    path = os.fspath(path)
    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
        raise ColoValueError("colo.load: step %r, want None or an int ≥ 0" % (step,))
    if missing_ok and step is None and not _has_checkpoint(path):
        return None
    s = colo.session()
    got = _lib.call("colo_load", s, path.encode(), -1 if step is None else step)
    n = _lib.call("colo_loaded_state", s, None, 0)
    buf = ctypes.create_string_buffer(max(n, 1))
    _lib.call("colo_loaded_state", s, buf, n)
    saved = pickle.loads(buf.raw[:n]) if n else {"state": None, "parts": {}}
    parts = saved.get("parts", {})
    for name, obj in list(_parts.items()):
        if name not in parts:
            raise ColoValueError("colo.load: the checkpoint of step %d in %s has no values for %s (saved by a program without it)" % (got, path, name))
        obj._colo_load(parts[name])
    return got, saved.get("state")
