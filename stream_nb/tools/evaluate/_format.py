"""Formatting ``stream-nb evaluate``'s results: the table of models, a TAN tree as text."""

from __future__ import annotations

import typing

__all__ = ["format_table", "format_tree"]


def _fmt(value: typing.Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "accuracy" or kind == "log_loss":
        return f"{value:.4f}"
    return f"{value:,.0f}"


_COLUMNS = (("model", "model"), ("accuracy", "accuracy"), ("log_loss", "log loss"),
            ("events_per_s", "events/s"), ("state_bytes", "state bytes"))


def format_table(rows: list[dict], markdown: bool = False) -> str:
    """The :meth:`Evaluation.table` rows as aligned text, or as a Markdown table.

    >>> print(format_table([{"model": "nb", "accuracy": 0.75, "log_loss": 0.5, "events_per_s": 1234.5, "state_bytes": 900}]))
    model  accuracy  log loss  events/s  state bytes
    nb       0.7500    0.5000     1,234          900
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


def format_tree(model) -> str:
    """A TAN model's tree as text lines ``parent -> child  cmi`` (nats), breadth-first from the root."""
    if not model.tree:
        return (f"no tree yet ({model.n_learned:,.0f} events learned, rebuild_every={model.rebuild_every}): "
                "the model predicts as naive Bayes")
    width = max(len(f"{p} -> {c}") for p, c, _ in model.tree)
    lines = [f"root {model.root!s}; {len(model.tree)} edges, parent -> child: CMI I(parent; child | class) in nats"]
    lines += [f"  {f'{p} -> {c}'.ljust(width)}  {cmi:.4g}" for p, c, cmi in model.tree]
    return "\n".join(lines)

