"""Run ``stream-nb`` with fault hooks installed: how the kill tests reach the daemon's narrow windows.

The production code has no test switches: it calls the hooks of
:class:`stream_nb.snapshots.FaultHooks` (no-ops by default) at the points where
a crash matters most. This launcher installs hooks that pause there, long
enough for a test to ``kill -9`` the daemon inside the window, then hands the
rest of the command line to :func:`stream_nb.cli.main`::

    python tests/fault_launcher.py --pause-snapshot-write 30 -- run --snapshot-dir ...
    python tests/fault_launcher.py --pause-before-commit 30 -- run --exactly-once ...
    python tests/fault_launcher.py --pause-before-sink-commit 30 -- run --snapshot-dir ... --output ...
    python tests/fault_launcher.py --fail-before-commit 2,5 -- run --exactly-once --model-topic ...
    python tests/fault_launcher.py --pause-before-commit 60 --pause-from-commit 5 -- run --exactly-once ...

``--fail-before-commit`` raises in the 2nd and 5th calls of the commit hook: a
group member (``--model-topic``) aborts those transactions and rewinds.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from stream_nb import cli
from stream_nb.snapshots import FaultHooks, install_fault_hooks

log = logging.getLogger("stream_nb.snapshot")


class InjectedFault(RuntimeError):
    """The failure the hooks raise where a test asked for one."""


class Pauses(FaultHooks):
    """Sleep inside the fault windows: between a snapshot's write and rename, before a transaction's commit.

    ``fail_commits``: the calls of the commit hook (counted from 1) that raise :class:`InjectedFault`;
    ``pause_from``: the first call of the commit hook that pauses ``before_commit`` s.
    """

    def __init__(self, snapshot_write: float = 0.0, before_commit: float = 0.0, fail_commits: frozenset = frozenset(),
                 before_sink_commit: float = 0.0, pause_from: int = 1):
        self.snapshot_write = snapshot_write
        self.before_commit = before_commit
        self.pause_from = pause_from
        self.before_sink = before_sink_commit
        self.fail_commits = fail_commits
        self.commit_calls = 0

    def before_rename(self, temporary: str, path: str) -> None:
        if self.snapshot_write:
            time.sleep(self.snapshot_write)

    def before_sink_commit(self, sequence: int) -> None:
        if self.before_sink:
            log.warning("test hook: pausing %.1f s between snapshot %s and the commit of its output lines",
                        self.before_sink, sequence)
            time.sleep(self.before_sink)

    def before_transaction_commit(self, sequence: int) -> None:
        self.commit_calls += 1
        if self.before_commit and self.commit_calls >= self.pause_from:
            log.warning("test hook: pausing %.1f s between snapshot %s and its transaction's commit",
                        self.before_commit, sequence)
            time.sleep(self.before_commit)
        if self.commit_calls in self.fail_commits:
            log.warning("test hook: failing transaction commit %d", self.commit_calls)
            raise InjectedFault(f"test hook: transaction commit {self.commit_calls} fails")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(prog="fault_launcher", description=__doc__.splitlines()[0])
    parser.add_argument("--pause-snapshot-write", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--pause-before-commit", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--pause-before-sink-commit", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--pause-from-commit", type=int, default=1, metavar="N",
                        help="pause before a commit from the Nth call of the commit hook on (from 1)")
    parser.add_argument("--fail-before-commit", default="", metavar="N,M,...",
                        help="raise in these calls of the commit hook (from 1)")
    options = parser.parse_args(argv[:split])
    fail = frozenset(int(n) for n in options.fail_before_commit.split(",") if n.strip())
    install_fault_hooks(Pauses(options.pause_snapshot_write, options.pause_before_commit, fail,
                               options.pause_before_sink_commit, options.pause_from_commit))
    return cli.main(argv[split + 1:])


if __name__ == "__main__":
    sys.exit(main())
