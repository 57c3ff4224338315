"""``stream-nb evaluate``: inputs, the prequential numbers against a loop written here, the report's pictures."""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import orjson
import pytest

from stream_nb import AODE, EM, MDL, TAN, Gaussian, NaiveBayes, Tree
from stream_nb.tools.evaluate import (
    BadRow,
    evaluate,
    format_table,
    open_events,
    parse_cell,
    parse_model_specs,
    rolling_accuracy,
    state_bytes,
)
from stream_nb.exceptions import ConfigError

FLOOR = 1e-15
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# A small CSV of our own: ints (categorical), floats (numeric), strings, missing cells,
# unlabeled rows, and bad rows of every kind the CSV reader knows.
CSV_TEXT = """\
id,outlook,temperature,windy,visits,label
1,sunny,29.5,yes,3,no
2,sunny,27.0,no,4,no
3,overcast,21.0,no,1,yes

4,rain,18.5,,2,yes
5,rain,16.0,yes,2,no
6,overcast,19.0,yes,,yes
7,sunny,22.0,no,3,
8,rain,17.5,no,1,yes,extra
9,sunny,28.5,yes,4,0.5
10,overcast,hot,no,1,yes
11,sunny,30.0,yes,3,no
12,rain,15.5,no,2,yes
13,overcast,20.5,yes,1,yes
14,sunny,26.0,no,4,no
15,rain,,yes,2,no
"""

# What the rows above are, by the documented rule (id dropped; line 5 blank).
CSV_EVENTS = [
    ({"outlook": "sunny", "temperature": 29.5, "windy": "yes", "visits": 3}, "no"),
    ({"outlook": "sunny", "temperature": 27.0, "windy": "no", "visits": 4}, "no"),
    ({"outlook": "overcast", "temperature": 21.0, "windy": "no", "visits": 1}, "yes"),
    ({"outlook": "rain", "temperature": 18.5, "visits": 2}, "yes"),
    ({"outlook": "rain", "temperature": 16.0, "windy": "yes", "visits": 2}, "no"),
    ({"outlook": "overcast", "temperature": 19.0, "windy": "yes"}, "yes"),
    ({"outlook": "sunny", "temperature": 22.0, "windy": "no", "visits": 3}, None),
    # line 10: 7 cells; line 11: label 0.5; line 12: "hot" for the numeric temperature
    ({"outlook": "sunny", "temperature": 30.0, "windy": "yes", "visits": 3}, "no"),
    ({"outlook": "rain", "temperature": 15.5, "windy": "no", "visits": 2}, "yes"),
    ({"outlook": "overcast", "temperature": 20.5, "windy": "yes", "visits": 1}, "yes"),
    ({"outlook": "sunny", "temperature": 26.0, "windy": "no", "visits": 4}, "no"),
    ({"outlook": "rain", "windy": "yes", "visits": 2}, "no"),
]

MAKERS = {"nb": NaiveBayes, "aode": lambda: AODE(numeric=MDL(warmup=5)), "tan": lambda: TAN(numeric=MDL(warmup=5), search=Tree(rebuild_every=4))}


def reference(events, make):
    """The prequential loop, written out: predict (decision and posterior), score, then learn.

    A labeled event with no prediction (the model knows no class yet) is not scored; a class the
    model does not name costs the floor."""
    model = make()
    labeled = scored = correct = with_proba = 0
    loss = 0.0
    n = 0
    flags = []
    for x, y in events:
        n += 1
        proba = model.predict_proba_one(x)
        prediction = model.predict_one(x)
        if y is None:
            continue
        labeled += 1
        flags.append(prediction == y)
        if prediction is not None:
            scored += 1
            correct += prediction == y
        if proba:
            with_proba += 1
            p = proba.get(y, 0.0)
            loss += -math.log(min(1.0 - FLOOR, max(p, FLOOR)))
        model.learn_one(x, y)
    arrays, meta = model.state()
    size = sum(a.nbytes for a in arrays.values()) + len(orjson.dumps(meta, option=orjson.OPT_NON_STR_KEYS))
    return {"events": n, "labeled": labeled, "scored": scored, "accuracy": correct / scored,
            "log_loss": loss / with_proba, "state_bytes": size, "flags": flags, "model": model}


def write_csv(tmp_path) -> pathlib.Path:
    path = tmp_path / "weather.csv"
    path.write_text(CSV_TEXT)
    return path


def cli(*args, input=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    return subprocess.run([sys.executable, "-m", "stream_nb.cli", *args], capture_output=True, input=input,
                          env=env, cwd=cwd, timeout=300)


def table_rows(stdout: str) -> dict[str, dict]:
    """The printed table, by model: the metrics, events/s, state bytes (None: "-"), drifts."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model ") and "accuracy" in line)
    rows = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        name, acc, kappa, kappa_t, kappa_m, f1, loss, eps, size, drifts = line.split()
        number = lambda text: None if text == "-" else float(text.replace(",", ""))  # noqa: E731
        rows[name] = {"accuracy": number(acc), "kappa": number(kappa), "kappa_t": number(kappa_t),
                      "kappa_m": number(kappa_m), "macro_f1": number(f1), "log_loss": number(loss),
                      "events_per_s": number(eps), "state_bytes": None if size == "-" else int(size.replace(",", "")),
                      "drifts": int(drifts)}
    return rows


def check_png(path: pathlib.Path, min_bytes: int = 8_000) -> np.ndarray:
    import matplotlib.image

    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert len(data) >= min_bytes, f"{path} is only {len(data)} bytes"
    image = matplotlib.image.imread(str(path))
    assert image.ndim == 3 and image.shape[0] >= 200 and image.shape[1] >= 400, image.shape
    assert image.std() > 0.01, f"{path} is blank"
    return image


# ----------------------------------------------------------------------------- reading


@pytest.mark.parametrize("cell, value", [
    ("", None), ("   ", None), ("7", 7), ("-7", -7), ("+7", 7), ("0", 0), ("3.0", 3.0), ("-0.25", -0.25),
    (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0), ("2E-2", 0.02), (" 12 ", 12), ("007", "007"), ("0x10", "0x10"),
    ("nan", "nan"), ("inf", "inf"), ("true", "true"), ("sunny", "sunny"), ("  new york ", "new york"),
    ("1,5", "1,5"), ("1.2.3", "1.2.3"),
])
def test_parse_cell_rule(cell, value):
    got = parse_cell(cell)
    assert got == value and type(got) is type(value)


def test_csv_rows_are_parsed_by_the_rule_and_bad_rows_are_reported(tmp_path):
    src = open_events(str(write_csv(tmp_path)))
    items = list(src)
    events = [(x, y) for x, y, *_ in (i for i in items if not isinstance(i, BadRow))]
    bad = [i for i in items if isinstance(i, BadRow)]
    # line 12 ("hot") is only rejected by a model: the reader passes it on
    hot = ({"outlook": "overcast", "temperature": "hot", "windy": "no", "visits": 1}, "yes")
    assert events == CSV_EVENTS[:7] + [hot] + CSV_EVENTS[7:]
    assert [(b.where.rsplit(" ", 1)[1], b.reason) for b in bad] == [("10", "wrong_cell_count"), ("11", "bad_label")]
    assert "expected 6 cells as in the header, got 7" in bad[0].error
    assert "0.5" in bad[1].error
    assert src.blank_lines == 1
    assert src.total == 16  # lines after the header (the blank one included), for the progress bar


def test_jsonl_and_stdin_sniffing(tmp_path):
    lines = [json.dumps({"id": i, **x, "label": y}) for i, (x, y) in enumerate(CSV_EVENTS)]
    data = ("\n".join(lines[:3]) + "\n[1, 2]\n\n" + "\n".join(lines[3:]) + "\n").encode()
    path = tmp_path / "weather.jsonl"
    path.write_bytes(data)
    for src in (open_events(str(path)), open_events("-", stdin=io.BytesIO(data))):
        items = list(src)
        assert [(x, y) for x, y, _ in (i for i in items if not isinstance(i, BadRow))] == CSV_EVENTS
        assert [b.reason for b in items if isinstance(b, BadRow)] == ["not_an_object"]
        assert src.blank_lines == 1
    csv_src = open_events("-", stdin=io.BytesIO(CSV_TEXT.encode()))
    assert "(csv)" in csv_src.describe
    assert len([i for i in csv_src if not isinstance(i, BadRow)]) == len(CSV_EVENTS) + 1


def test_events_limit_counts_valid_events(tmp_path):
    src = open_events(str(write_csv(tmp_path)), events=9)
    assert len([i for i in src if not isinstance(i, BadRow)]) == 9


def test_river_streams_are_deterministic_and_named_by_string_keys():
    from river.datasets import synth

    a = [(x, y) for x, y, _ in open_events("river:LED", events=50)]
    b = [(x, y) for x, y, _ in open_events("river:led", events=50)]
    direct = list(synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True).take(50))
    assert a == b == [({str(k): v for k, v in x.items()}, y) for x, y in direct]
    other = [(x, y) for x, y, _ in open_events("river:LED", events=50, seed=2)]
    assert other != a
    sea = [(x, y) for x, y, _ in open_events("river:SEA", events=5)]  # any synth classification stream
    assert len(sea) == 5 and set(sea[0][0]) == {"0", "1", "2"}


@pytest.mark.parametrize("source, message", [
    ("river:Nope", "no such river classification stream; expected one of"),
    ("river:Friedman", "river's Friedman is a regression stream, not single-label classification"),
    ("data.txt", "no such file"),
])
def test_bad_inputs_say_what_was_expected(tmp_path, source, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        open_events(source if source.startswith("river:") else str(tmp_path / source))


def test_unknown_extension_asks_for_format(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("a,label\n1,x\n")
    with pytest.raises(ConfigError, match="give --format csv or --format jsonl"):
        open_events(str(path))
    assert [(x, y) for x, y, _ in open_events(str(path), fmt="csv")] == [({"a": 1}, "x")]


# ----------------------------------------------------------------------------- models


def test_model_specs():
    specs = parse_model_specs("nb, aode:m=5 ,tan:rebuild-every=500:bins=10,tan")
    assert [(s.label, s.model, s.params) for s in specs] == [
        ("nb", "nb", {}), ("aode:m=5", "aode", {"m": 5}),
        ("tan:rebuild-every=500:bins=10", "tan", {"rebuild_every": 500, "bins": 10}), ("tan", "tan", {}),
    ]
    for text, message in [
        ("nb:m=3", "nb takes alpha, loss, var_smoothing"),
        ("tan:rebuild_every=often", "rebuild_every: expected an integer, got 'often'"),
        ("tan:bins", "expected PARAM=VALUE after ':', got 'bins'"),
        ("nb,nb", "nb listed twice"),
        ("", "expected at least one of nb, aode, tan"),
        ("nb:types=a=numeric", "give --types for all models"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_model_specs(text)


# ----------------------------------------------------------------------------- the numbers


def test_evaluate_equals_an_independent_prequential_loop(tmp_path):
    path = write_csv(tmp_path)
    models = {name: make() for name, make in MAKERS.items()}
    seen_bad = []
    result = evaluate(open_events(str(path)), models, on_bad_row=seen_bad.append)
    assert (result.n_events, result.n_labeled, result.n_unlabeled) == (12, 11, 1)
    assert result.bad_by_reason == {"wrong_cell_count": 1, "bad_label": 1, "bad_feature_type": 1}
    assert seen_bad == result.bad_rows and result.bad_rows[2].where.endswith("line 12")
    assert "feature 'temperature' is numeric" in result.bad_rows[2].error
    assert result.blank_lines == 1
    for r in result.models:
        ref = reference(CSV_EVENTS, MAKERS[r.name])
        assert r.metrics.predicted == ref["events"] == 12
        assert r.metrics.labeled == ref["labeled"] == 11
        assert sum(row["scored"] for row in r.rows) == ref["scored"] == 10
        assert r.accuracy == pytest.approx(ref["accuracy"], abs=1e-12)
        assert r.log_loss == pytest.approx(ref["log_loss"], rel=1e-12)
        assert r.correct.tolist() == ref["flags"]
        assert r.memory_bytes == ref["state_bytes"] == state_bytes(r.model)
        assert r.model.predict_proba_one({"outlook": "rain"}) == ref["model"].predict_proba_one({"outlook": "rain"})
        assert r.seconds > 0 and r.events_per_second > 0
    rows = result.table()
    assert [row["model"] for row in rows] == ["nb", "aode", "tan"]
    assert "0 unlabeled" not in result.counts_line() and "1 unlabeled" in result.counts_line()


def test_evaluate_runs_each_models_own_prequential_step(tmp_path):
    """evaluate scores what the daemon's step (the learners' prequential_one) gives, not a loop of its own."""
    taken = []

    class Watched(NaiveBayes):
        def prequential_one(self, x, y, **kwargs):
            taken.append((x, y))
            return super().prequential_one(x, y, **kwargs)

    semi = lambda: NaiveBayes(missing=EM(unlabeled=True, unlabeled_weight=0.5))  # noqa: E731
    result = evaluate(open_events(str(write_csv(tmp_path))), {"watched": Watched(), "semi": semi()})
    hot = ({"outlook": "overcast", "temperature": "hot", "windy": "no", "visits": 1}, "yes")
    # every valid event once, in order; the one the model rejects ("hot") too, and it stays a bad row
    assert taken == CSV_EVENTS[:7] + [hot] + CSV_EVENTS[7:]
    assert result.bad_by_reason == {"wrong_cell_count": 1, "bad_label": 1, "bad_feature_type": 1}
    watched, semi_result = result.models
    ref = reference(CSV_EVENTS, NaiveBayes)
    assert watched.correct.tolist() == ref["flags"] and watched.log_loss == pytest.approx(ref["log_loss"], rel=1e-12)
    # the unlabeled event (line 9) is learned by the semi-supervised model only, and counted so
    assert (watched.metrics.learned, semi_result.metrics.learned) == (11, 12)
    looped = semi()
    for x, y in CSV_EVENTS:
        looped.predict_and_proba_one(x)
        looped.learn_one(x, y)
    assert semi_result.model.predict_proba_one({"outlook": "rain"}) == looped.predict_proba_one({"outlook": "rain"})


def test_rolling_accuracy_matches_a_plain_window():
    rng = np.random.default_rng(3)
    flags = rng.random(200) < 0.7
    for window in (1, 7, 50, 500):
        got = rolling_accuracy(flags, window)
        want = [flags[max(0, i + 1 - window): i + 1].mean() for i in range(len(flags))]
        assert np.allclose(got, want)


def test_format_table_text_and_markdown():
    rows = [{"model": "tan:bins=3", "accuracy": 0.93814, "kappa": 0.8, "kappa_t": 0.5, "kappa_m": -0.25,
             "macro_f1": 0.9, "log_loss": 0.16, "events_per_s": 22734.2, "state_bytes": 377733, "drifts": 2},
            {"model": "nb", "accuracy": None, "kappa": None, "kappa_t": None, "kappa_m": None, "macro_f1": None,
             "log_loss": None, "events_per_s": None, "state_bytes": 100, "drifts": 0}]
    text = format_table(rows)
    assert text.splitlines()[1].split() == ["tan:bins=3", "0.9381", "0.8000", "0.5000", "-0.2500", "0.9000",
                                            "0.1600", "22,734", "377,733", "2"]
    assert text.splitlines()[2].split() == ["nb", "-", "-", "-", "-", "-", "-", "-", "100", "0"]
    md = format_table(rows, markdown=True).splitlines()
    assert md[0] == ("| model | accuracy | kappa | kappa_t | kappa_m | macro F1 | log loss | events/s | state bytes "
                     "| drifts |")
    assert md[2] == "| tan:bins=3 | 0.9381 | 0.8000 | 0.5000 | -0.2500 | 0.9000 | 0.1600 | 22,734 | 377,733 | 2 |"


# ----------------------------------------------------------------------------- the command


def test_cli_on_our_csv_prints_the_loop_numbers_and_reports_bad_rows(tmp_path):
    path = write_csv(tmp_path)
    out = cli("evaluate", "--input", str(path), "--models", "nb,aode,tan:rebuild_every=4", "--warmup", "5")
    assert out.returncode == 0, out.stderr.decode()
    stdout, stderr = out.stdout.decode(), out.stderr.decode()
    assert "12 events (11 labeled, 1 unlabeled: predicted only); 3 bad rows skipped" in stdout
    assert "bad_feature_type: 1, bad_label: 1, wrong_cell_count: 1" in stdout
    assert "1 blank lines" in stdout
    for line in ("line 10: wrong_cell_count", "line 11: bad_label", "line 12: bad_feature_type"):
        assert line in stderr
    assert "\r" not in stderr  # no progress bar when stderr is not a terminal
    rows = table_rows(stdout)
    assert list(rows) == ["nb", "aode", "tan:rebuild_every=4"]
    # --warmup reaches NaiveBayes too (it places the bins of numeric="bins")
    for name, make in [("nb", lambda: NaiveBayes(numeric=Gaussian())), ("aode", lambda: AODE(numeric=MDL(warmup=5))),
                       ("tan:rebuild_every=4", lambda: TAN(numeric=MDL(warmup=5), search=Tree(rebuild_every=4)))]:
        ref = reference(CSV_EVENTS, make)
        assert rows[name]["accuracy"] == round(ref["accuracy"], 4)
        assert rows[name]["log_loss"] == round(ref["log_loss"], 4)
        assert rows[name]["state_bytes"] == ref["state_bytes"]
        assert rows[name]["events_per_s"] > 0
    tree = reference(CSV_EVENTS, lambda: TAN(numeric=MDL(warmup=5), search=Tree(rebuild_every=4)))["model"].tree
    assert f"TAN tree of tan:rebuild_every=4: root {tree[0][0]}; {len(tree)} edges" in stdout
    for p, c, cmi in tree:
        assert re.search(rf"^  {re.escape(f'{p} -> {c}')} +{cmi:.4g}$", stdout, re.M)


def test_cli_on_stdin(tmp_path):
    out = cli("evaluate", "--input", "-", "--models", "nb", input=CSV_TEXT.encode())
    assert out.returncode == 0, out.stderr.decode()
    assert table_rows(out.stdout.decode())["nb"]["accuracy"] == round(reference(CSV_EVENTS, NaiveBayes)["accuracy"], 4)


@pytest.mark.slow
def test_cli_on_river_led_with_report(tmp_path):
    from river.datasets import synth

    report = tmp_path / "report"
    out = cli("evaluate", "--input", "river:LED", "--events", "1500", "--models", "nb,aode,tan:rebuild_every=500",
              "--report", str(report), "--window", "200")
    assert out.returncode == 0, out.stderr.decode()
    stdout = out.stdout.decode()
    assert "river:LED (1,500 events, seed 1): 1,500 events (1,500 labeled, 0 unlabeled" in stdout
    events = [({str(k): v for k, v in x.items()}, y)
              for x, y in synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True).take(1500)]
    rows = table_rows(stdout)
    refs = {"nb": reference(events, NaiveBayes), "aode": reference(events, AODE),
            "tan:rebuild_every=500": reference(events, lambda: TAN(search=Tree(rebuild_every=500)))}
    for name, ref in refs.items():
        assert rows[name]["accuracy"] == round(ref["accuracy"], 4)
        assert rows[name]["log_loss"] == round(ref["log_loss"], 4)
        assert rows[name]["state_bytes"] == ref["state_bytes"]
    # the pictures
    curves = check_png(report / "learning_curves.png")
    tree = check_png(report / "tan_tree.png")
    assert curves.shape != tree.shape
    md = (report / "report.md").read_text()
    assert "![learning curves](learning_curves.png)" in md
    assert "![TAN tree of tan:rebuild_every=500](tan_tree.png)" in md
    assert "| model | accuracy | kappa | kappa_t | kappa_m | macro F1 | log loss | events/s | state bytes |" in md
    assert f"| nb | {refs['nb']['accuracy']:.4f} | " in md and f" | {refs['nb']['log_loss']:.4f} | " in md
    assert "stream-nb evaluate --input river:LED --events 1500 --models nb,aode,tan:rebuild_every=500" in md
    tan = refs["tan:rebuild_every=500"]["model"]
    assert f"Root `{tan.root}`" in md
    assert sum(line.startswith(f"| {p} | {c} | ") for p, c, _ in tan.tree for line in md.splitlines()) == len(tan.tree)


def test_report_with_two_tans_draws_two_trees(tmp_path):
    from stream_nb.tools.report import write_report

    events = [(x, y) for x, y, _ in open_events("river:Agrawal", events=600)]
    result = evaluate(events, {"tan:rebuild_every=100": TAN(search=Tree(rebuild_every=100)), "tan": TAN(search=Tree(rebuild_every=0))})
    paths = write_report(result, str(tmp_path), window=100)
    assert set(paths) == {"report", "learning_curves", "tree:tan:rebuild_every=100", "tree:tan"}
    check_png(pathlib.Path(paths["tree:tan:rebuild_every=100"]))
    empty = pathlib.Path(paths["tree:tan"])  # rebuild_every=0: no tree yet, said in the picture and the text
    assert empty.read_bytes()[:8] == PNG_SIGNATURE
    md = pathlib.Path(paths["report"]).read_text()
    assert "(tan_tree-tan-rebuild-every-100.png)" in md and "(tan_tree-tan.png)" in md
    assert "No tree yet (600 events learned; rebuild_every=0: only on rebuild())" in md


@pytest.mark.parametrize("args, message", [
    (["--models", "nb", "--m", "3"], "--m applies to aode, none of which is in --models nb"),
    (["--models", "svm"], "unknown model 'svm'"),
    (["--models", "nb", "--window", "0"], "--window: expected a positive integer, got 0"),
    (["--models", "tan:bins=0"], "bins"),
    (["--models", "nb", "--events", "0"], "--events: expected a positive integer, got 0"),
])
def test_cli_invalid_settings_exit_2(args, message):
    out = cli("evaluate", "--input", "river:LED", *args)
    assert out.returncode == 2
    assert message in out.stderr.decode()


def test_cli_no_valid_event_exits_1(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('[1]\n{"a": \n')
    out = cli("evaluate", "--input", str(path))
    assert out.returncode == 1
    stderr = out.stderr.decode()
    assert "line 1: not_an_object" in stderr and "line 2: invalid_json" in stderr
    assert f"no valid event in {path}" in stderr


def test_cli_warns_when_nothing_is_labeled_and_checks_feature_columns(tmp_path):
    path = tmp_path / "nolabel.csv"
    path.write_text("a,b,class\n1,x,p\n2,y,q\n")
    out = cli("evaluate", "--input", str(path), "--models", "nb")
    assert out.returncode == 0
    assert "2 events (0 labeled, 2 unlabeled: predicted only)" in out.stdout.decode()
    assert "no event has a label in the field 'label' (--label-field)" in out.stderr.decode()
    out = cli("evaluate", "--input", str(path), "--models", "nb", "--label-field", "class")
    assert table_rows(out.stdout.decode())["nb"]["accuracy"] == 0.0
    out = cli("evaluate", "--input", str(path), "--features", "a,c")
    assert out.returncode == 2
    assert "--features names column(s) 'c', which the header ['a', 'b', 'class'] does not have" in out.stderr.decode()

