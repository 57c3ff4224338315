"""Holdout accuracy of stream_nb's TAN and AODE beside Weka's, on numeric streams.

    python bench/holdout.py [--train 10000] [--test 10000] [--streams RandomTree,Agrawal,Bananas,Phishing,...]

(``python bench/learners.py --part holdout`` prints the same table, and ``--part all`` includes it.)

Each model learns the first ``--train`` events of a stream and predicts the next
``--test`` (river's numeric data sets that need no download, Bananas, Phishing,
ImageSegments and Shuttle: the first half and the second half). The peers, from Maven Central jars (see ``bench/peers/``),
read the same events from an ARFF file declared as MOA declares them (Agrawal:
``elevel``, ``car``, ``zipcode`` nominal, the other six numeric; otherwise a
feature with a float value is numeric):

- Weka 3.8's ``BayesNet`` with the TAN search
  (``weka.classifiers.bayes.net.search.local.TAN``) and its other defaults:
  numeric attributes discretised by ``weka.filters.supervised.attribute.Discretize``
  (Fayyad and Irani's MDL criterion) chosen on the training events, and
  ``SimpleEstimator`` with alpha 0.5;
- Weka 3.6's ``AODE`` on MDL-discretised data (``FilteredClassifier`` with the
  same ``Discretize``, whose cut points come from the training events only; AODE
  left Weka's core after 3.6).

Beside them, stream_nb's TAN and AODE with their defaults (``numeric=MDL()``) and with the
equal-frequency bins that were their default before issue 15; with the ARFF file's
declaration (``types=``) where that differs from what stream_nb infers
(Agrawal's integer ``age``, ``hvalue``, ``hyears``); and given Weka's cut points
(``numeric=Edges(...)``, from the same ``Discretize`` on the training events), which
separates the discretiser from the rest of the model. For the last, the
predictions are also compared one by one with Weka's. On RandomTree they are
the same, event for event. Where they are not, the models differ beyond the
bins: Weka's BayesNet smooths with alpha 0.5, ours with 1, and its schedule
builds the tree once, on all the training events. Our TAN weighs each candidate
edge as Weka's TAN search does, by the gain in the Bayesian network score
(``calcScoreWithExtraParent``, which charges an edge for its cells);
``TAN(search=Tree(score="cmi"))`` (the row ``Tree(score="cmi")``, the default before)
weighs it by the conditional mutual information alone, so on Agrawal it links the
weakly dependent many-valued ``car`` and ``zipcode`` where Weka's tree does not.
Without a JDK the Weka rows are skipped with a line saying why, and stream_nb's are still printed.

``--diagnose`` adds what tells the bins from the rest of the model: TAN on Weka's cut points with
``Tree(score="cmi")`` and rebuilt once more after the last training event (Weka builds on all of
them; the schedule's last rebuild may be earlier), and AODE with ``MDL(bins=1)`` (MDL's cut points alone)
and ``MDL(bins=3)``, each with the count of its predictions that differ from Weka's; and each model on the cut
points our MDL criterion keeps on the raw training values (one interval per distinct value, which a streaming
discretiser does not keep: it cuts only at its fine layer's edges), with whether they are Weka's; and, after
the table, each numeric feature's cut points where Weka's and our TAN's (its defaults, after the training
events) differ.

The script prints a markdown table and, last, issue 15's holdout targets (our
TAN and AODE with their defaults at least Weka's accuracy) with PASS or FAIL.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from pathlib import Path

from river import datasets
from river.datasets import synth

import numpy as np

from stream_nb import AODE, MDL, TAN, Edges, EqualFrequency, Tree
from stream_nb.stats import mdl_cuts

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (bench/peers/: the Java peers)

STREAMS = {
    "RandomTree": lambda: synth.RandomTree(
        seed_tree=1, seed_sample=1, n_classes=3, n_num_features=4, n_cat_features=4, n_categories_per_feature=3
    ),
    "Agrawal": lambda: synth.Agrawal(seed=1, classification_function=2, perturbation=0.05),
    "Bananas": datasets.Bananas,
    "Phishing": datasets.Phishing,
    "ImageSegments": datasets.ImageSegments,
    "Shuttle": datasets.Shuttle,
}
#: Data sets of a fixed size (river's numeric ones that need no download): the first half trains,
#: the second half tests.
FIXED = ("Bananas", "Phishing", "ImageSegments", "Shuttle")

WEKA_TAN = ("weka.classifiers.bayes.BayesNet", ["-D", "-Q", "weka.classifiers.bayes.net.search.local.TAN"])
WEKA_AODE = (
    "weka.classifiers.meta.FilteredClassifier",
    ["-F", "weka.filters.supervised.attribute.Discretize", "-W", "weka.classifiers.bayes.AODE"],
)


def split(sname, n_train, n_test):
    if sname in FIXED:
        events = list(STREAMS[sname]())
        half = len(events) // 2
        return events[:half], events[half:]
    events = list(STREAMS[sname]().take(n_train + n_test))
    return events[:n_train], events[n_train:]


def ours(model, train, test):
    """Learn ``train`` one event at a time, then predict ``test``; the predictions."""
    for x, y in train:
        model.learn_one(x, y)
    return [model.predict_one(x) for x, _ in test]


def accuracy(predictions, test):
    return sum(p == y for p, (_, y) in zip(predictions, test)) / len(test)


def inferred_types(events):
    """What stream_nb infers when not told: a feature is numeric when its first value is a float."""
    types = {}
    for x, _ in events:
        for name, v in x.items():
            if name not in types and v is not None:
                types[name] = "numeric" if isinstance(v, float) else "categorical"
    return types


def run_stream(sname, train, test, skip_reason, diagnose=False):
    """``[(learner, accuracy, note)]`` for one stream, and ``{learner: accuracy}`` for the targets."""
    events = train + test
    attrs, target = peers.declare(events, peers.NOMINAL.get(sname))
    types = peers.model_types(attrs)
    rows = []
    acc = {}
    cuts = None
    weka = {}
    if skip_reason is None:
        with tempfile.TemporaryDirectory(prefix="stream_nb-holdout-") as tmp:
            arff = peers.write_arff(Path(tmp) / f"{sname}.arff", events, attrs, target, sname)
            weka["TAN"] = peers.holdout("weka-3.8", arff, len(train), target, "Weka BayesNet TAN", *WEKA_TAN)
            weka["AODE"] = peers.holdout("weka-3.6", arff, len(train), target, "Weka 3.6 AODE, MDL bins", *WEKA_AODE)
            cuts = peers.cut_points(arff, len(train))
        acc["Weka TAN"], acc["Weka AODE"] = weka["TAN"].accuracy, weka["AODE"].accuracy
        rows.append(("Weka 3.8 BayesNet, TAN search (defaults: MDL bins)", weka["TAN"].accuracy, weka["TAN"].learner))
        rows.append(("Weka 3.6 AODE on MDL bins", weka["AODE"].accuracy, weka["AODE"].learner))
    declared = types != inferred_types(events)
    for name, make in (("TAN", TAN), ("AODE", AODE)):
        acc[name] = accuracy(ours(make(), train, test), test)
        rows.append((f"stream_nb {name}", acc[name], "defaults (numeric=MDL())"))
        if declared:  # the targets compare like with like: the ARFF's declaration (Agrawal's age numeric)
            acc[name] = accuracy(ours(make(types=types), train, test), test)
            rows.append((f"stream_nb {name}, types as declared", acc[name], "types= the ARFF declaration"))
        if make is TAN:  # the tree weighed by the conditional mutual information, the default before
            cmi = accuracy(ours(make(search=Tree(score="cmi"), **({"types": types} if declared else {})), train, test),
                           test)
            rows.append(("stream_nb TAN, Tree(score=\"cmi\")", cmi, "search=Tree(score=\"cmi\")"
                         + (", types= the ARFF declaration" if declared else "")))
        before = make(numeric=EqualFrequency(), **({"types": types} if declared else {}))
        rows.append((f"stream_nb {name}, equal-frequency bins", accuracy(ours(before, train, test), test),
                     "numeric=EqualFrequency() (the default before issue 15)"
                     + (", types= the ARFF declaration" if declared else "")))
        if cuts is not None:
            edges = {a.name: cuts[str(a.name)] for a in attrs if a.kind == "numeric"}
            predictions = ours(make(types=types, numeric=Edges(edges)), train, test)
            differ = sum(a != b for a, b in zip(predictions, weka[name].predictions))
            note = f"numeric=Edges(...) Weka's MDL cut points; predictions that differ from Weka's {name}: {differ}"
            rows.append((f"stream_nb {name}, Weka's cut points", accuracy(predictions, test), note))
            if diagnose:
                rows.extend(diagnosis(name, make, types, edges, train, test, weka[name].predictions))
                rows.append(raw_mdl_row(name, make, types, edges, train, test, weka[name].predictions))
    if diagnose and cuts is not None:
        rows.append(cut_point_lines(sname, TAN(**({"types": types} if declared else {})), train, cuts))
    return rows, acc


def cut_point_lines(sname, model, train, weka_cuts) -> list[str]:
    """``--diagnose``: each numeric feature's cut points, Weka's beside those ``model`` (TAN with its defaults)
    has after learning ``train``, where they differ."""
    for x, y in train:
        model.learn_one(x, y)
    mine = model.cut_points()
    lines = []
    for name, weka in weka_cuts.items():
        ours_now = [round(c, 4) for c in mine.get(name, [])]
        theirs = [round(c, 4) for c in weka]
        if ours_now != theirs:
            lines.append(f"{sname} {name}: Weka {theirs}, stream_nb TAN {ours_now}")
    return lines


def diagnosis(name, make, types, edges, train, test, weka_predictions):
    """``--diagnose``: the rows that tell the bins from the rest of the model (see docs/benchmarks.md, "Discretiser")."""
    out = []
    cmi = {"search": Tree(score="cmi")}
    variants = {"TAN": [(cmi, False), ({}, True), (cmi, True)],
                "AODE": [({"numeric": MDL(bins=1)}, False), ({"numeric": MDL(bins=3)}, False)]}[name]
    cuts = name == "TAN"  # TAN on Weka's cut points (the rest of the model); AODE on its own bins (the bins)
    for params, last in variants:
        model = make(types=types, **({"numeric": Edges(edges)} if cuts else {}), **params)
        for x, y in train:
            model.learn_one(x, y)
        if last:
            model.rebuild()  # once more after the last training event, as Weka builds on all of them
        predictions = [model.predict_one(x) for x, _ in test]
        differ = sum(a != b for a, b in zip(predictions, weka_predictions))
        text = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "defaults"
        where = "Weka's cut points, " if cuts else ""
        out.append((f"stream_nb {name}, {where}{text}{', rebuilt after training' if last else ''}",
                    accuracy(predictions, test), f"predictions that differ from Weka's {name}: {differ}"))
    return out


def raw_mdl_edges(train, types) -> dict:
    """Cut points of our MDL criterion (``stream_nb.stats.mdl_cuts``) on the raw training values: one interval
    per distinct value of each numeric feature, a cut midway between two values (as Weka's)."""
    classes = sorted({y for _, y in train}, key=repr)
    code = {y: i for i, y in enumerate(classes)}
    edges = {}
    for name, kind in types.items():
        if kind != "numeric":
            continue
        pairs = [(x[name], code[y]) for x, y in train if x.get(name) is not None]
        values = np.array([v for v, _ in pairs], dtype=float)
        distinct, at = np.unique(values, return_inverse=True)
        counts = np.zeros((len(distinct), len(classes)))
        np.add.at(counts, (at, [c for _, c in pairs]), 1.0)
        edges[name] = [float((distinct[b - 1] + distinct[b]) / 2) for b in mdl_cuts(counts)]
    return edges


def raw_mdl_row(name, make, types, weka_edges, train, test, weka_predictions):
    """``--diagnose``: the model on the cut points our MDL criterion keeps on the raw training values, which a
    streaming discretiser cannot keep (it cuts only at its fine layer's edges); whether they are Weka's."""
    edges = raw_mdl_edges(train, types)
    same = all(np.allclose(edges.get(k, []), v, rtol=0, atol=1e-9) if len(edges.get(k, [])) == len(v) else False
               for k, v in weka_edges.items())
    predictions = ours(make(types=types, numeric=Edges(edges)), train, test)
    differ = sum(a != b for a, b in zip(predictions, weka_predictions))
    return (f"stream_nb {name}, our MDL on the raw training values", accuracy(predictions, test),
            f"numeric=Edges(...) of stream_nb.stats.mdl_cuts over each distinct training value; the same cut points as "
            f"Weka's: {'yes' if same else 'no'}; predictions that differ from Weka's {name}: {differ}")


def run(names, n_train=10000, n_test=10000, diagnose=False):
    """Print the holdout table for the streams ``names``; return issue 15's targets ``[(text, ok)]``."""
    reason = peers.ready()
    if reason:
        print(f"{reason}\n")
    print("| stream | train / test | learner | accuracy | configuration |")
    print("|---|---|---|---:|---|")
    targets, cut_lines = [], []
    for sname in names:
        train, test = split(sname, n_train, n_test)
        rows, acc = run_stream(sname, train, test, reason, diagnose)
        if rows and isinstance(rows[-1], list):  # --diagnose: the cut points, printed after the table
            cut_lines += rows.pop()
        for learner, a, note in rows:
            print(f"| {sname} | {len(train):,} / {len(test):,} | {learner} | {a:.4f} | {note} |")
        sys.stdout.flush()
        if reason is None:
            targets.append((f"TAN >= Weka BayesNet TAN in holdout on {sname} ({acc['TAN']:.4f} vs {acc['Weka TAN']:.4f})",
                            acc["TAN"] >= acc["Weka TAN"]))
            targets.append((f"AODE >= Weka AODE on MDL bins in holdout on {sname} "
                            f"({acc['AODE']:.4f} vs {acc['Weka AODE']:.4f})", acc["AODE"] >= acc["Weka AODE"]))
    if cut_lines:
        print("\nCut points that differ, Weka's (on the training events) and stream_nb TAN's (defaults, after them):\n")
        print("\n".join(f"- {line}" for line in cut_lines))
    return targets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=10000, help="training events of a synthetic stream (default 10000)")
    parser.add_argument("--test", type=int, default=10000, help="test events of a synthetic stream (default 10000)")
    parser.add_argument("--streams", default=",".join(STREAMS),
                        help=f"comma-separated, of {', '.join(STREAMS)} (default all)")
    parser.add_argument("--diagnose", action="store_true",
                        help="also TAN on Weka's cut points with Tree(score=\"cmi\") and rebuilt after the last "
                             "training event, and AODE with MDL(bins=1) and MDL(bins=3) (what explains the gaps)")
    args = parser.parse_args(argv)
    names = [s for s in args.streams.split(",") if s]
    unknown = [s for s in names if s not in STREAMS]
    if unknown or not names:
        parser.error(f"--streams: expected names among {', '.join(STREAMS)}, got {args.streams!r}")
    if args.train <= 0 or args.test <= 0:
        parser.error(f"--train and --test: expected positive counts, got {args.train} and {args.test}")
    print("# Holdout accuracy beside Weka")
    print(f"python {platform.python_version()}, {platform.machine()}, command: python bench/holdout.py "
          f"--train {args.train} --test {args.test} --streams {','.join(names)}{' --diagnose' if args.diagnose else ''}\n")
    targets = run(names, args.train, args.test, args.diagnose)
    if targets:
        print("\n| target | result |")
        print("|---|---|")
        for text, ok in targets:
            print(f"| {text} | {'PASS' if ok else 'FAIL'} |")


if __name__ == "__main__":
    main()
