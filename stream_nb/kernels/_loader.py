"""Compiling the kernels on first use (see :mod:`stream_nb.kernels`)."""

from __future__ import annotations

import hashlib
import inspect
import pathlib
import types

from . import (_aode, _codes, _common, _dense_scores, _detectors, _hashed, _json, _kdb, _kdb_sparse, _naive, _one,
               _pair_blocks, _sparse_scores, _sparse_structure, _spodes, _tree, _tuples)
from ._cache import Jit

__all__ = ["compile_all", "compiled"]

#: The kernel modules: every function of each is compiled, but its ``warm()``, which calls each kernel once
#: on small inputs of the types the models pass.
MODULES = (_common, _hashed, _tuples, _sparse_scores, _sparse_structure, _dense_scores, _naive, _detectors, _spodes,
           _aode, _tree, _kdb, _one, _pair_blocks, _kdb_sparse, _codes, _json)

_compiled: types.SimpleNamespace | None = None


def compiled() -> types.SimpleNamespace:
    """The compiled kernels, by name; numba is imported and the kernels compiled (or read from its cache)
    on the first call."""
    global _compiled
    if _compiled is None:
        # numba takes 0.5 to 1 s to import: loaded late, so that commands that never learn never pay for it
        import numba

        _keep_blas_threads(numba)
        from . import _address  # the views of arrays by address: compiled with numba, so imported here

        jit = Jit(numba, source_digest(), nogil=True, error_model="numpy")
        for name in _address.__all__:
            setattr(_address, name, jit(getattr(_address, name)))
        kernels = {}
        for module in MODULES:
            module._address = _address
            for name, fn in list(vars(module).items()):
                if not inspect.isfunction(fn) or fn.__module__ != module.__name__ or name == "warm":
                    continue
                # a kernel's callers in its module (and in later ones, through the module) find the compiled one;
                # a helper its module names in INLINE is compiled into each caller (numba's inline="always")
                kernel = jit(fn, inline="always") if name in getattr(module, "INLINE", ()) else jit(fn)
                setattr(module, name, kernel)
                if not name.startswith("_"):
                    if name in kernels:
                        raise RuntimeError(f"two kernels named {name!r}: {module.__name__} and another")
                    kernels[name] = kernel
        _compiled = types.SimpleNamespace(**kernels)
    return _compiled


def source_digest() -> str:
    """A digest of every kernel module's source: the kernels' cache directory is named by it (a kernel's
    cached machine code holds the helpers it calls from the other modules, which numba does not check)."""
    digest = hashlib.sha256()
    for path in sorted(pathlib.Path(__file__).parent.glob("_*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _first(x):
    return x


def _keep_blas_threads(numba) -> None:
    """numba's first compilation loads scipy's BLAS (its linear algebra, where scipy is installed): in a
    process that keeps BLAS on one thread (``stream-nb run``), keep that one on one thread too."""
    from threadpoolctl import threadpool_info, threadpool_limits

    threads = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    numba.njit(_first)(0)
    if threads and max(threads) == 1:
        threadpool_limits(limits=1, user_api="blas")


def compile_all(modules=None) -> None:
    """Compile every kernel (of the kernel ``modules`` named, e.g. ``("_naive",)``; None: all) for the
    argument types the models pass, what a first call would: later calls, and later processes through
    numba's cache, find them ready."""
    k = compiled()
    for module in MODULES:
        if modules is None or module.__name__.rpartition(".")[2] in modules:
            module.warm(k)
