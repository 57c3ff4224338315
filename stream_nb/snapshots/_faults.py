"""Fault hooks: the points of the snapshot and commit protocol where a fault test steps in.

The crash tests kill the daemon with ``kill -9`` inside windows too short to hit
by chance: while a snapshot's temporary file waits for its rename, and between
an exactly-once snapshot and the commit of its transaction, and between a
snapshot and the commit of the output-file lines it covers. Production code
calls the hooks of a :class:`FaultHooks` object at those points; the one
installed by default does nothing. A test installs its own subclass, which may
sleep there, with :func:`install_fault_hooks` before it builds the daemon (the
kill tests run ``stream-nb`` through a small launcher under ``tests/`` that does
exactly that and then calls :func:`stream_nb.cli.main`).

A :class:`~stream_nb.snapshots.SnapshotStore` and a checkpointer take the
installed hooks when they are built, or the ones given to them (``faults=``).

>>> class Recording(FaultHooks):
...     def __init__(self): self.calls = []
...     def before_rename(self, temporary, path): self.calls.append(path)
>>> previous = install_fault_hooks(Recording())
>>> installed_fault_hooks().before_rename(".x.tmp", "x")
>>> installed_fault_hooks().calls
['x']
>>> _ = install_fault_hooks(previous)
>>> type(installed_fault_hooks()).__name__
'FaultHooks'
"""

from __future__ import annotations

__all__ = ["FaultHooks", "install_fault_hooks", "installed_fault_hooks"]


class FaultHooks:
    """The fault points of the snapshot and commit protocol; this base class does nothing at any."""

    def before_rename(self, temporary: str, path: str) -> None:
        """A snapshot's ``temporary`` file is written and fsynced; it is renamed over ``path`` next."""

    def before_transaction_commit(self, sequence: int) -> None:
        """Exactly-once outputs: snapshot ``sequence`` is written; its transaction commits next.

        A group member (``--model-topic``) calls it with its transactions' count instead: the
        transaction's outputs and partition states are sent; its offsets and commit come next.
        """

    def before_sink_commit(self, sequence: int) -> None:
        """Output files (a :class:`~stream_nb.engine.TwoPhaseSink`): snapshot ``sequence`` is durable; the lines
        it covers are appended to the files next."""


_installed: FaultHooks = FaultHooks()


def install_fault_hooks(hooks: FaultHooks | None) -> FaultHooks:
    """Make ``hooks`` (``None``: the no-op default) the process's fault hooks; return the previous ones."""
    global _installed
    if hooks is not None and not isinstance(hooks, FaultHooks):
        raise TypeError(f"fault hooks must be a FaultHooks instance, got {type(hooks).__name__}")
    previous, _installed = _installed, hooks if hooks is not None else FaultHooks()
    return previous


def installed_fault_hooks() -> FaultHooks:
    """The fault hooks new stores and checkpointers take (the no-op default unless a test installed some)."""
    return _installed
