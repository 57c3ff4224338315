"""numba's cache of the compiled kernels, and what happens where it has nowhere to write one.

The kernels are cached in a directory of their own, named by a digest of every kernel module's source
(:class:`Jit`'s ``tag``: numba checks only a kernel's own file), under the first of ``NUMBA_CACHE_DIR``,
the ``__pycache__`` beside the source and ``~/.cache/numba`` it can write to; with none, they are
compiled in memory on every start, with one warning that says how to keep them.
"""

from __future__ import annotations

import logging
import os
import pathlib
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

    def __init__(self, numba: typing.Any, tag: str = "", **options: typing.Any) -> None:
        self.numba = numba
        self.options = options
        self.directory = cache_directory(tag)
        self.cache = self.directory is not None
        if not self.cache:
            log.warning(NO_CACHE_WARNING)

    def __call__(self, fn: typing.Callable, **more: typing.Any) -> typing.Any:
        """The compiled dispatcher of ``fn`` (``more``: further options of ``numba.njit`` for this one)."""
        options = {**self.options, **more}
        if self.cache:
            config, given = self.numba.config, self.numba.config.CACHE_DIR
            config.CACHE_DIR = self.directory  # read when the dispatcher is made: the user's other code keeps its own
            try:
                return self.numba.njit(cache=True, **options)(fn)
            except RuntimeError as error:
                # numba.core.caching: "cannot cache function 'f': no locator available for file '...'"
                if "cannot cache function" not in str(error):
                    raise
                self.cache = False
                log.warning(NO_CACHE_WARNING)
            finally:
                config.CACHE_DIR = given
        return self.numba.njit(cache=False, **options)(fn)


def cache_directory(tag: str) -> str | None:
    """Where the kernels of source digest ``tag`` are kept: ``stream_nb-<tag>`` in ``NUMBA_CACHE_DIR``, in
    the kernels' ``__pycache__`` or in the user's cache directory, the first that can be written; None."""
    places = [os.environ.get("NUMBA_CACHE_DIR"), pathlib.Path(__file__).parent / "__pycache__",
              pathlib.Path.home() / ".cache" / "numba"]
    for place in places:
        if not place:
            continue
        directory = pathlib.Path(place) / f"stream_nb-{tag}"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            probe = directory / f".probe-{os.getpid()}"
            probe.touch()
            probe.unlink()
        except OSError:
            continue
        return str(directory)
    return None
