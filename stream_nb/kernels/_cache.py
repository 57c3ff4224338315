"""numba's cache of the compiled kernels, and what happens where it has nowhere to write one.

numba keeps a compiled kernel in the first of these directories it can write to (it checks by
creating a file there): ``NUMBA_CACHE_DIR``, the ``__pycache__`` beside the kernel's source, the
user's cache directory (``~/.cache/numba``). A directory it cannot write to is passed over, even
when it holds valid machine code, and with none left ``njit(cache=True)`` raises. That is the case
of a read-only root file system (a container with ``readOnlyRootFilesystem``, a systemd unit with
``ProtectSystem=strict``) without ``NUMBA_CACHE_DIR``: there the kernels are compiled in memory,
on every start, with one warning that says how to keep them.
"""

from __future__ import annotations

import logging
import typing

__all__ = ["NO_CACHE_WARNING", "Jit"]

log = logging.getLogger("stream_nb.kernels")

NO_CACHE_WARNING = (
    "numba found no writable directory for its cache (NUMBA_CACHE_DIR unset or read-only, and so are "
    "the package's __pycache__ and ~/.cache): the kernels are compiled in memory, again at every start; "
    "point NUMBA_CACHE_DIR at a writable directory to keep them"
)


class Jit:
    """``numba.njit(cache=True, **options)``, or without the cache where numba has no directory to write.

    Parameters
    ----------
    numba : module
        The numba module (imported by the caller, on first use).
    **options
        Further options of ``numba.njit``.
    """

    def __init__(self, numba: typing.Any, **options: typing.Any) -> None:
        self.numba = numba
        self.options = options
        self.cache = True

    def __call__(self, fn: typing.Callable) -> typing.Any:
        """The compiled dispatcher of ``fn``."""
        if self.cache:
            try:
                return self.numba.njit(cache=True, **self.options)(fn)
            except RuntimeError as error:
                # numba.core.caching: "cannot cache function 'f': no locator available for file '...'"
                if "cannot cache function" not in str(error):
                    raise
                self.cache = False
                log.warning(NO_CACHE_WARNING)
        return self.numba.njit(cache=False, **self.options)(fn)
