"""Draw the benchmark pages' plots from the numbers in their own tables.

Run from the repository's root: ``python docs/plots.py``. It reads the tables
of ``docs/benchmarks.md`` (each found by its header row), so a plot never holds
a number the page does not, and writes ``docs/img/bench-*.png``, which the page
embeds below each table. Measuring is the scripts' job in ``bench/``: run them,
put their figures in the tables, then run this.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the Agg canvas is chosen)

DOCS = Path(__file__).resolve().parent
PAGE = DOCS / "benchmarks.md"
OUT = DOCS / "img"


def tables(markdown: str) -> dict[tuple[str, ...], list[list[str]]]:
    """Every Markdown table of the page: header cells -> rows of cells (the first table with a header wins)."""
    found: dict[tuple[str, ...], list[list[str]]] = {}
    block: list[str] = []
    for line in markdown.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            block.append(line.strip())
            continue
        if len(block) >= 3:
            header, *rows = [[c.strip() for c in row.strip("|").split("|")] for row in block if not
                             re.fullmatch(r"\|[-:| ]+\|", row)]
            found.setdefault(tuple(header), rows)
        block = []
    return found


def table(found, *header: str) -> list[list[str]]:
    """The rows of the table whose header starts with ``header``; an error naming it when the page has none."""
    for key, rows in found.items():
        if key[:len(header)] == header:
            return rows
    raise LookupError(f"{PAGE.name}: no table whose header starts with {' | '.join(header)}")


def number(cell: str) -> float:
    """``**0.8133**``, ``43,302``, ``0.9946 (4)``, ``26.46 µs`` -> the number; ``–`` or empty -> NaN."""
    match = re.search(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", cell.replace("**", ""))
    return float(match.group(0).replace(",", "")) if match else float("nan")


def save(fig, name: str) -> Path:
    path = OUT / name
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def learners(found) -> Path:
    rows = table(found, "stream", "model", "events/s")
    streams = list(dict.fromkeys(r[0] for r in rows))
    models = list(dict.fromkeys(r[1] for r in rows))
    rate = {(r[0], r[1]): number(r[2]) for r in rows}
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(models)
    for i, model in enumerate(models):
        ax.bar([s + i * width for s in range(len(streams))], [rate.get((st, model), float("nan")) for st in streams],
               width, label=model.replace("stream_nb ", ""))
    ax.set_xticks([s + 0.4 - width / 2 for s in range(len(streams))], streams)
    ax.set_yscale("log")
    ax.set_ylabel("events per second (log scale)")
    ax.set_title("Prequential throughput (bench/learners.py)")
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    return save(fig, "bench-learners.png")


def peers(found) -> Path:
    rows = table(found, "learner", "events/s (median)")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    names = [r[0].replace("`", "") for r in rows]
    ax.barh(names, [number(r[1]) for r in rows], color=["0.6" if "," not in r[2] and "×" not in r[2] else "C0"
                                                         for r in rows])
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("events per second on LED (log scale); grey: the peers")
    ax.set_title("Beside MOA, Weka, river and CapyMOA (--part peers)")
    ax.tick_params(axis="y", labelsize=7)
    return save(fig, "bench-peers.png")


def discretiser(found) -> Path:
    rows = table(found, "stream", "events", "TAN", "AODE", "SPODE")
    header = next(k for k in found if k[:5] == ("stream", "events", "TAN", "AODE", "SPODE"))
    models = header[2:]
    fig, axes = plt.subplots(1, len(models), figsize=(11, 4), sharey=True)
    for ax, model, col in zip(axes, models, range(2, 2 + len(models))):
        before = [number(r[col].split("->")[0]) for r in rows]
        after = [number(r[col].split("->")[1]) for r in rows]
        y = range(len(rows))
        ax.hlines(y, before, after, color="0.7")
        ax.plot(before, y, "o", color="0.5", label="equal_frequency")
        ax.plot(after, y, "o", color="C0", label="mdl (the default)")
        ax.set_title(model)
        ax.set_xlabel("prequential accuracy")
    axes[0].set_yticks(list(range(len(rows))), [r[0] for r in rows])
    axes[0].invert_yaxis()
    axes[0].legend(fontsize=7)
    fig.suptitle("Equal-frequency bins -> supervised MDL bins (bench/discretise.py --part prequential)")
    return save(fig, "bench-discretiser.png")


def drift(found) -> Path:
    header = next(k for k in found if k[:2] == ("model", "STAGGER-abrupt"))
    rows = table(found, "model", "STAGGER-abrupt")
    keep = ("nb", "nb:window=2000", "nb:half_life=1000", "nb:ddm", "nb:adwin", "river GaussianNB",
            "river HoeffdingAdaptiveTree")
    rows = [r for r in rows if r[0] in keep]
    streams = header[1:]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(rows)
    for i, r in enumerate(rows):
        ax.bar([s + i * width for s in range(len(streams))], [number(c) for c in r[1:]], width, label=r[0])
    ax.set_xticks([s + 0.4 - width / 2 for s in range(len(streams))], streams, fontsize=8)
    ax.set_ylim(0.5, 1.0)
    ax.set_ylabel("prequential accuracy")
    ax.set_title("Forgetting on drifting streams, 20,000 events (bench/drift.py)")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    return save(fig, "bench-drift.png")


def delayed(found) -> Path:
    header = next(k for k in found if k[:1] == ("mean delay D",))
    rows = table(found, "mean delay D")
    delays = [number(r[0]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for col, name in enumerate(header[1:], start=1):
        ax.plot(delays, [number(r[col]) for r in rows], "o-", label=name.replace("`", ""))
    ax.set_xscale("log")
    ax.set_xlabel("mean label delay D, events (log scale)")
    ax.set_ylabel("accuracy of the prediction on arrival")
    ax.set_title("Labels that come later (bench/delayed.py)")
    ax.legend(fontsize=7)
    return save(fig, "bench-delayed.png")


PLOTS = (learners, peers, discretiser, drift, delayed)


def main() -> int:
    found = tables(PAGE.read_text(encoding="utf-8"))
    OUT.mkdir(exist_ok=True)
    for plot in PLOTS:
        print(plot(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
