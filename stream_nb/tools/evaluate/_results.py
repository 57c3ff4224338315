"""``stream-nb evaluate --results FILE``: the windowed results as CSV, or Parquet when pyarrow is installed."""

from __future__ import annotations

import importlib.util
import os

from ..._console import writable_file
from ...exceptions import ConfigError

__all__ = ["check_results_path", "write_results"]

_FORMATS = (".csv", ".parquet")


def check_results_path(path: str, name: str = "--results") -> str:
    """The format of ``path`` (``"csv"`` or ``"parquet"``, from its extension), checked before any work:
    a :class:`~stream_nb.exceptions.ConfigError` naming ``name`` for another extension, for Parquet without
    pyarrow, or for a place that cannot be written.

    >>> check_results_path("r.csv")
    'csv'
    >>> check_results_path("r.xlsx")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --results r.xlsx: expected a file name ending in .csv or .parquet, got .xlsx
    """
    ext = os.path.splitext(path)[1].lower()
    if ext not in _FORMATS:
        raise ConfigError(f"{name} {path}: expected a file name ending in {' or '.join(_FORMATS)}, "
                          f"got {ext or 'no extension'}")
    if ext == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ConfigError(f"{name} {path}: writing Parquet needs pyarrow, which is not installed "
                          "(pip install pyarrow); or name a .csv file")
    writable_file(path, name)
    return ext[1:]


def write_results(evaluation, path: str) -> str:
    """Write :meth:`~stream_nb.tools.evaluate.Evaluation.results` to ``path`` (CSV or Parquet, by its
    extension: see :func:`check_results_path`); returns ``path``.

    >>> import os, tempfile, pandas
    >>> from stream_nb import NaiveBayes
    >>> from stream_nb.tools.evaluate import evaluate
    >>> result = evaluate([({"a": 1}, "x"), ({"a": 2}, "y"), ({"a": 1}, "x")], {"nb": NaiveBayes()}, window=2)
    >>> path = write_results(result, os.path.join(tempfile.mkdtemp(), "r.csv"))
    >>> pandas.read_csv(path)[["model", "window", "labeled", "scored"]].values.tolist()
    [['nb', 0, 2, 1], ['nb', 1, 1, 1]]
    """
    fmt = check_results_path(path)
    frame = evaluation.results()
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path
