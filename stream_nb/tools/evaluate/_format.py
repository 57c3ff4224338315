"""Formatting ``stream-nb evaluate``'s results: the table of models, a TAN tree as text."""

from __future__ import annotations

import typing

__all__ = ["format_cut_points", "format_table", "format_tree", "why_no_tree"]


_FIGURES = ("accuracy", "kappa", "kappa_t", "kappa_m", "macro_f1", "log_loss")


def _fmt(value: typing.Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind in _FIGURES:
        return f"{value:.4f}"
    return f"{value:,.0f}"


_COLUMNS = (("model", "model"), ("accuracy", "accuracy"), ("kappa", "kappa"), ("kappa_t", "kappa_t"),
            ("kappa_m", "kappa_m"), ("macro_f1", "macro F1"), ("log_loss", "log loss"),
            ("events_per_s", "events/s"), ("state_bytes", "state bytes"), ("drifts", "drifts"))


def format_table(rows: list[dict], markdown: bool = False) -> str:
    """The :meth:`Evaluation.table` rows as aligned text, or as a Markdown table.

    >>> print(format_table([{"model": "nb", "accuracy": 0.75, "kappa": 0.5, "kappa_t": 0.25, "kappa_m": -0.1,
    ...                      "macro_f1": 0.7, "log_loss": 0.5, "events_per_s": 1234.5, "state_bytes": 900,
    ...                      "drifts": 0}]))
    model  accuracy   kappa  kappa_t  kappa_m  macro F1  log loss  events/s  state bytes  drifts
    nb       0.7500  0.5000   0.2500  -0.1000    0.7000    0.5000     1,234          900       0
    """
    cells = [[h for _, h in _COLUMNS]]
    for row in rows:
        cells.append([str(row["model"])] + [_fmt(row[k], k) for k, _ in _COLUMNS[1:]])
    if markdown:
        lines = ["| " + " | ".join(cells[0]) + " |", "|---|" + "---:|" * (len(_COLUMNS) - 1)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in cells[1:]]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in cells) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in cells
    )


def why_no_tree(model) -> str:
    """Why a TAN has no tree yet: how many events it learned, and when (or whether) the first rebuild comes.

    >>> from stream_nb import TAN, Tree
    >>> why_no_tree(TAN()), why_no_tree(TAN(search=Tree(rebuild_every=0)))
    ('0 events learned; the first rebuild comes after 100', '0 events learned; rebuild_every=0: only on rebuild()')
    """
    learned = f"{model.n_learned:,.0f} events learned"
    if not model.rebuild_every:
        return f"{learned}; rebuild_every=0: only on rebuild()"
    if model.n_rebuilds:  # early rebuilds that found no dependence between the attributes
        return (f"{learned}; the counts show no dependence between the attributes yet, the tree comes after "
                f"{model.rebuild_every:,} at the latest")
    return f"{learned}; the first rebuild comes after {model.rebuild_interval():,}"


def format_tree(model) -> str:
    """A TAN model's tree as text lines ``parent -> child  cmi`` (nats), breadth-first from the root."""
    if not model.tree:
        return f"no tree yet ({why_no_tree(model)}): the model predicts as naive Bayes"
    width = max(len(f"{p} -> {c}") for p, c, _ in model.tree)
    lines = [f"root {model.root!s}; {len(model.tree)} edges, parent -> child: CMI I(parent; child | class) in nats"]
    lines += [f"  {f'{p} -> {c}'.ljust(width)}  {cmi:.4g}" for p, c, cmi in model.tree]
    return "\n".join(lines)



def format_cut_points(model) -> str:
    """Where a model cuts each discretised numeric feature now, one line per feature ("" without any).

    >>> from stream_nb import TAN, Edges
    >>> print(format_cut_points(TAN(numeric=Edges({"temp": [10.0, 25.0]}))))
    <BLANKLINE>
    >>> model = TAN(numeric=Edges({"temp": [10.0, 25.0]}))
    >>> model.learn_one({"temp": 12.5}, "mild")
    >>> print(format_cut_points(model))
      temp: 10, 25  (3 bins)
    """
    cuts = model.cut_points() if hasattr(model, "cut_points") else {}
    if not cuts:
        return ""
    width = max(len(str(name)) for name in cuts)
    return "\n".join(f"  {(str(name) + ':').ljust(width + 1)} {', '.join(f'{c:.6g}' for c in edges) or 'none'}"
                     f"  ({len(edges) + 1} bin{'s' if edges else ''})" for name, edges in cuts.items())
