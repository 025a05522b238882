"""Loading of colo's C library and the calls into it.

The library (libcolo.so, built from cmd/libcolo with
``go build -buildmode=c-shared``) is loaded on first use, not at import, so
that importing colo in a process that forks (PyTorch's DataLoader) costs
nothing. The process that loads it is the only one that may call it: the
Go runtime's threads do not survive fork(), and a call from a forked child
would hang. Every call checks this first and raises ForkError instead.

ctypes releases the GIL during each call, so other Python threads run
while Go waits for the servers.
"""

import ctypes
import os
import threading

_lock = threading.Lock()
_lib = None
_pid = None
_forked = False


class ColoError(RuntimeError):
    """An error of colo: its message names the table, the argument or the
    node, and what was expected."""


class ColoValueError(ColoError, ValueError):
    """A bad argument (a shape, a dtype, a declaration)."""


class ColoIndexError(ColoError, IndexError):
    """A row out of a table's range."""


class ColoTimeoutError(ColoError, TimeoutError):
    """The cluster did not answer in time (joining, or waiting for it)."""


class ForkError(ColoError):
    """colo was called from a process forked after it was loaded."""


_CLASSES = {2: ColoValueError, 3: ColoIndexError, 4: ColoTimeoutError}


def _after_fork_in_child():
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def library_path():
    """Return the path of libcolo.so: $COLO_LIBRARY, else the one beside
    this package."""
    p = os.environ.get("COLO_LIBRARY")
    if p:
        return p
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libcolo.so")


def _open(path):
    """Load the library at path, or raise ColoError naming where it was
    looked for (COLO_LIBRARY, or beside the package), what is wrong there
    and how to put it right."""
    env = os.environ.get("COLO_LIBRARY")
    beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libcolo.so")
    if env:
        where = "COLO_LIBRARY=%s" % env
        fix = ("point COLO_LIBRARY at the file that `go build -buildmode=c-shared -o libcolo.so "
               "./cmd/libcolo` writes in colo's repository, or unset it to use %s" % beside)
    else:
        where = path
        fix = ("build it with `go build -buildmode=c-shared -o %s ./cmd/libcolo` in colo's "
               "repository, or set COLO_LIBRARY to its path" % path)
    if not os.path.exists(path):
        problem = "no such file"
    elif os.path.isdir(path):
        problem = "a directory, want the file libcolo.so"
    else:
        try:
            return ctypes.CDLL(path)
        except OSError as e:  # not a shared library, or one of another machine
            problem = "cannot be loaded: %s" % e
    raise ColoError("colo's C library (%s): %s; %s" % (where, problem, fix))


def _fork_error():
    return ForkError(
        "colo cannot be used in a process forked after colo was loaded "
        "(process %d loaded it, this is process %d): the Go runtime's threads do not "
        "survive fork(). Call colo from the main process only; for a DataLoader with "
        "num_workers > 0 whose workers touch colo, pass "
        'multiprocessing_context="spawn".' % (_pid, os.getpid())
    )


def lib():
    """Return the loaded library, loading it on first use."""
    global _lib, _pid
    if _forked:
        raise _fork_error()
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        L = _open(library_path())
        i64, p, d = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
        sig = {
            "colo_open": [ctypes.c_char_p],
            "colo_close": [i64, d],
            "colo_rank": [i64],
            "colo_size": [i64],
            "colo_servers": [i64],
            "colo_info": [i64, p, i64],
            "colo_barrier": [i64],
            "colo_allreduce": [i64, p, i64],
            "colo_table": [i64, ctypes.c_char_p],
            "colo_pull": [i64, p, i64, p, i64],
            "colo_pull_wait": [i64, p, i64, p, i64],
            "colo_push": [i64, p, i64, p, i64],
            "colo_pull_all": [i64, p, i64],
            "colo_push_all": [i64, p, i64],
            "colo_wait": [i64],
            "colo_poll": [i64],
            "colo_init_rows": [i64, p, i64, p, i64],
            "colo_unique": [i64, p, i64, p, p],
            "colo_save": [i64, ctypes.c_char_p, i64, p, i64],
            "colo_load": [i64, ctypes.c_char_p, i64],
            "colo_loaded_state": [i64, p, i64],
            "colo_error": [i64, p, i64],
            "colo_last_error": [p, i64],
            "colo_nop": [i64],
        }
        for name, args in sig.items():
            f = getattr(L, name)
            f.argtypes = args
            f.restype = i64
        _pid = os.getpid()
        _lib = L
        return L


def check(rc):
    """Return rc, or raise the error whose id is -rc."""
    if rc >= 0:
        return rc
    buf = ctypes.create_string_buffer(8192)
    cls = _lib.colo_error(-rc, buf, len(buf))
    raise _CLASSES.get(cls, ColoError)(buf.value.decode("utf-8", "replace"))


def call(name, *args):
    """Call colo_NAME with args and return its result, raising its error."""
    L = lib()
    return check(getattr(L, name)(*args))


def last_error():
    """Return the text of the library's most recent error."""
    buf = ctypes.create_string_buffer(8192)
    lib().colo_last_error(buf, len(buf))
    return buf.value.decode("utf-8", "replace")
