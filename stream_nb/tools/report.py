"""Pictures and the Markdown report of ``stream-nb evaluate`` and ``stream-nb explain``.

Everything is drawn with matplotlib's object-oriented API on an Agg canvas
(``matplotlib.figure.Figure`` + ``FigureCanvasAgg``): nothing touches pyplot or
the global backend, so a caller's interactive session is left alone, and no
display or graphviz binary is needed. The TAN tree is laid out here: the root
on top, one layer per depth, leaves left to right in the tree's order and
every parent centred over its children.
"""

from __future__ import annotations

import os
import textwrap
import typing

import numpy as np
import orjson

from .._console import writable_file
from ..exceptions import ConfigError
from .evaluate import format_table, rolling_accuracy, why_no_tree

__all__ = ["plot_learning_curves", "plot_tan_tree", "tree_layout", "plot_explanation", "write_report",
           "plot_formats", "check_plot_path"]


def plot_formats() -> dict[str, str]:
    """``{extension: description}`` of every file format the Agg canvas saves (png, svg, pdf, ...)."""
    # matplotlib, late on purpose (see _figure)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    return dict(sorted(FigureCanvasAgg(Figure()).get_supported_filetypes().items()))


def check_plot_path(path: str, name: str) -> None:
    """Check, before any work, that a picture can be saved at ``path``: ConfigError naming ``name`` otherwise.

    The extension must be one the canvas saves (none at all: PNG), and the file must be writable.

    >>> check_plot_path("out.txt", "--plot")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --plot out.txt: cannot draw a .txt file; expected one of .avif, .eps, ...
    """
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    formats = plot_formats()
    if ext and ext not in formats:
        raise ConfigError(f"{name} {path}: cannot draw a .{ext} file; expected one of "
                          f"{', '.join('.' + f for f in formats)} (or no extension: PNG)")
    writable_file(path, name)


def _figure(width: float, height: float):
    # matplotlib is loaded here, late, on purpose: it is heavy, and only --report and --plot draw
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plot_learning_curves(evaluation, path: str, window: int = 500) -> str:
    """Rolling prequential accuracy over ``window`` labeled events, one line per model, and a dotted
    vertical line in the model's colour at each drift its detector found (``ModelResult.drifts``); returns ``path``."""
    fig = _figure(8, 4.5)
    ax = fig.add_subplot()
    for r in evaluation.models:
        if not len(r.correct):
            continue
        y = rolling_accuracy(r.correct, window)
        x = np.arange(1, len(y) + 1)
        overall = "-" if r.accuracy is None else f"{r.accuracy:.4f}"
        (line,) = ax.plot(x, y, linewidth=1.4, label=f"{r.name} (overall {overall})")
        for d in r.drifts:  # the drifts the model's detector found, in labeled events of this evaluation
            ax.axvline(d, color=line.get_color(), linestyle=":", linewidth=1.0, alpha=0.8)
    ax.set_xlabel("labeled events")
    ax.set_ylabel(f"accuracy over the last {window:,} labeled events")
    ax.set_title(f"Prequential accuracy: {evaluation.source}", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.margins(x=0.01)
    if ax.lines:
        ax.legend(loc="lower right", fontsize=9)
    fig.savefig(path)
    return path


def tree_layout(edges: list, root) -> dict:
    """``{node: (x, depth)}`` for a tree given as ``(parent, child, weight)`` edges from ``root``.

    Leaves get x = 0, 1, 2, ... in depth-first order (children in the order of
    ``edges``); a parent sits at the mean x of its children.

    >>> tree_layout([("a", "b", 0.3), ("a", "c", 0.2), ("b", "d", 0.1)], "a")
    {'d': (0.0, 2), 'b': (0.0, 1), 'c': (1.0, 1), 'a': (0.5, 0)}
    """
    children: dict = {}
    for p, c, _ in edges:
        children.setdefault(p, []).append(c)
    pos: dict = {}
    next_leaf = [0.0]

    def place(node, depth):
        kids = children.get(node, [])
        for k in kids:
            place(k, depth + 1)
        if kids:
            x = sum(pos[k][0] for k in kids) / len(kids)
        else:
            x = next_leaf[0]
            next_leaf[0] += 1.0
        pos[node] = (x, depth)

    place(root, 0)
    return pos


def plot_tan_tree(edges: list, root, path: str, title: str = "TAN tree") -> str:
    """Draw a TAN tree (``model.tree``, rooted at ``model.root``) with each edge's CMI; returns ``path``.

    Edge widths grow with the conditional mutual information I(parent; child | class), whose value
    (in nats) labels the edge. An empty tree gives a picture saying so.
    """
    pos = tree_layout(edges, root) if root is not None else {}
    n_leaves = max(1, int(round(max((x for x, _ in pos.values()), default=0.0))) + 1)
    depth = max((d for _, d in pos.values()), default=0)
    fig = _figure(max(6.0, 1.0 * n_leaves + 1), max(3.0, 1.15 * (depth + 1) + 1))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title, fontsize=11)
    if not edges:
        ax.text(0.5, 0.5, "no tree yet: the model predicts as naive Bayes" if root is None else f"a single node: {root}",
                ha="center", va="center", transform=ax.transAxes)
        fig.savefig(path)
        return path
    top = max(c for _, _, c in edges) or 1.0
    for p, c, cmi in edges:
        (x0, d0), (x1, d1) = pos[p], pos[c]
        ax.plot([x0, x1], [-d0, -d1], color="tab:blue", alpha=0.75, linewidth=0.8 + 4.0 * cmi / top, zorder=1)
        ax.text((x0 + x1) / 2, -(d0 + d1) / 2, f"{cmi:.3g}", fontsize=7.5, ha="center", va="center", zorder=2,
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.9})
    for node, (x, d) in pos.items():
        is_root = node == root
        ax.text(x, -d, str(node), fontsize=9, ha="center", va="center", zorder=3,
                fontweight="bold" if is_root else "normal",
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "#ffe9b3" if is_root else "#e8f0fb",
                      "edgecolor": "#555555"})
    ax.set_xlim(-0.6, n_leaves - 0.4)
    ax.set_ylim(-depth - 0.5, 0.5)
    fig.savefig(path)
    return path


def plot_explanation(expl, path: str, subtitle: str | None = None, max_bars: int = 30) -> str:
    """Horizontal bars of an :class:`~stream_nb.tools.explain.Explanation`'s contributions; returns ``path``.

    Bars pointing right (green) push towards the first class, left (red) towards the second; the
    largest contributions are on top, beyond ``max_bars`` the rest are summed into one bar. Sampled
    values carry their standard error as error bars.
    """
    c1, c2 = expl.classes
    items = [(f"{c.attribute} = {_short(c.value)}", c.shapley, c.stderr) for c in expl.contributions]
    if len(items) > max_bars:
        rest = items[max_bars - 1:]
        items = items[: max_bars - 1] + [(f"{len(rest)} other attributes", sum(v for _, v, _ in rest), None)]
    labels = [lab for lab, _, _ in items] + ["prior (no attribute)"]
    vals = np.array([v for _, v, _ in items] + [expl.prior])
    errs = np.array([e if e is not None else 0.0 for _, _, e in items] + [0.0])
    colors = ["tab:green" if v >= 0 else "tab:red" for v in vals[:-1]] + ["tab:gray"]
    fig = _figure(8, max(3.0, 0.32 * len(labels) + 1.6))
    ax = fig.add_subplot()
    yy = np.arange(len(labels))[::-1]
    ax.barh(yy, vals, color=colors, xerr=errs if errs.any() else None, ecolor="#333333", capsize=2)
    ax.set_yticks(yy, labels, fontsize=8.5)
    ax.axvline(0, color="black", linewidth=0.8)
    for y, v in zip(yy, vals):
        ax.text(v, y, f" {v:+.3f} ", va="center", ha="left" if v >= 0 else "right", fontsize=7.5)
    lo, hi = min(0.0, float((vals - errs).min())), max(0.0, float((vals + errs).max()))
    pad = 0.22 * ((hi - lo) or 1.0)
    ax.set_xlim(lo - (pad if lo < 0 else 0.05 * pad), hi + (pad if hi > 0 else 0.05 * pad))
    ax.set_xlabel(f"contribution to ln P({c1!s}|x) / P({c2!s}|x):  < 0 favours {c2!s},  > 0 favours {c1!s}")
    method = "exact Shapley values" if expl.method == "exact" else (
        f"Shapley values from {expl.permutations} random permutations (error bars: ± 1 s.e.)")
    lines = [f"P({c1!s}|x) = {expl.proba[0]:.3f} vs P({c2!s}|x) = {expl.proba[1]:.3f}: "
             f"log-odds {expl.log_odds:+.3f} = prior {expl.prior:+.3f} + the contributions", method]
    if subtitle:
        lines += textwrap.wrap(subtitle, 100)
    ax.set_title("\n".join(lines), fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.savefig(path, format=None if os.path.splitext(path)[1] else "png")  # no extension: PNG at that very path
    return path


def _short(value: typing.Any, width: int = 18) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return text if len(text) <= width else text[: width - 1] + "…"


def _slug(name: str) -> str:
    out = "".join(ch if ch.isalnum() else "-" for ch in name).strip("-")
    return out or "model"


def write_report(evaluation, directory: str, window: int = 500, command: str | None = None) -> dict[str, str]:
    """Write ``learning_curves.png``, a tree PNG per TAN model and ``report.md`` into ``directory``.

    Returns ``{"report": path, "learning_curves": path, "tree:<model>": path, ...}``.
    """
    os.makedirs(directory, exist_ok=True)
    paths = {"learning_curves": plot_learning_curves(evaluation, os.path.join(directory, "learning_curves.png"),
                                                     window)}
    trees = [r for r in evaluation.models if hasattr(r.model, "tree")]
    lines = ["# stream-nb evaluate report", ""]
    if command:
        lines += ["```sh", command, "```", ""]
    lines += [
        f"Input: {evaluation.source}: {evaluation.counts_line()}.",
        "",
        "Every event is predicted by every model, then learned when labeled (prequential). "
        "kappa is Cohen's (against chance), kappa_t against the no-change classifier, kappa_m against "
        "the majority class; a labeled event the model gave no prediction (it knew no class yet) is not "
        "scored. Log loss in nats; events/s counts the time spent in each model's calls; state bytes = "
        "the arrays of `model.state()` plus the JSON size of its metadata (stream_nb's models only).",
        "",
        format_table(evaluation.table(), markdown=True),
        "",
        "## Drifts",
        "",
        "The drifts each model's detector found, after the labeled event whose error raised it:",
        "",
        *[f"- {r.name}: " + (", ".join(f"{d:,}" for d in r.drifts) if r.drifts else "none") for r in evaluation.models],
        "",
        "## Learning curves",
        "",
        f"Accuracy over the last {window:,} labeled events (fewer at the start).",
        "",
        "![learning curves](learning_curves.png)",
        "",
    ]
    for r in trees:
        name = "tan_tree.png" if len(trees) == 1 else f"tan_tree-{_slug(r.name)}.png"
        paths[f"tree:{r.name}"] = plot_tan_tree(
            r.model.tree, r.model.root, os.path.join(directory, name),
            title=f"TAN tree of {r.name} after {r.model.n_learned:,.0f} events (edge labels: CMI in nats)",
        )
        lines += [f"## TAN tree: {r.name}", ""]
        if r.model.tree:
            lines += [f"Root `{r.model.root}`; each edge parent → child carries the conditional mutual "
                      "information I(parent; child | class) in nats.", "",
                      f"![TAN tree of {r.name}]({name})", "",
                      "| parent | child | CMI |", "|---|---|---:|"]
            lines += [f"| {p} | {c} | {cmi:.4g} |" for p, c, cmi in r.model.tree]
        else:
            lines += [f"No tree yet ({why_no_tree(r.model)}): the model predicts as naive Bayes.", "",
                      f"![TAN tree of {r.name}]({name})"]
        lines.append("")
    if evaluation.bad_rows:
        lines += ["## Bad rows", "", f"{evaluation.n_bad:,} rows skipped; the first ones:", ""]
        lines += [f"- {row}" for row in evaluation.bad_rows[:10]]
        lines.append("")
    report = os.path.join(directory, "report.md")
    with open(report, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    paths["report"] = report
    return paths
