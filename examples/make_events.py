"""Write ``examples/events.jsonl``: a reproducible play-tennis-like event stream.

Each event is a day's weather -- ``outlook`` (sunny, overcast, rain),
``temperature`` (°C) and ``humidity`` (%) as numbers, ``windy`` as a boolean --
and ``label``, whether tennis was played ("yes"/"no"). The label follows the
textbook rule (overcast: play; sunny: play when humidity < 70; rain: play when
not windy) with 10% of the labels flipped. About one event in eight carries no
label (absent, or null), so it is only predicted.

A few lines show the dead-letter path, one per rejection reason, and one blank
line shows that blank lines are skipped (and counted):

==============  =========================================================
invalid_json    a truncated object
invalid_utf8    a Latin-1 encoded "ñ"
not_an_object   an array
nested_value    an object as the outlook
bad_label       an array as the label
bad_id          an object as the id
bad_feature_type  "hot" where temperature has been numeric (the model rejects it)
==============  =========================================================

Usage: ``python examples/make_events.py [OUTPUT]`` (default: next to this script).
The same seed always gives the same bytes.
"""

from __future__ import annotations

import json
import pathlib
import random
import sys

SEED = 20261121
N_LINES = 400

#: line number (1-based) -> (reason, raw line without newline)
MALFORMED: dict[int, tuple[str, bytes]] = {
    37: ("invalid_json", b'{"id": "e0037", "outlook": "sunny", "temperature": 24.5, "humid'),
    74: ("not_an_object", b'["e0074", "rain", 12.0, 91.0, true, "no"]'),
    111: ("nested_value", b'{"id": "e0111", "outlook": {"sky": "overcast"}, "temperature": 18.0, "label": "yes"}'),
    148: ("invalid_utf8", b'{"id": "e0148", "outlook": "ma\xf1ana", "temperature": 20.0, "label": "no"}'),
    185: ("blank", b""),
    222: ("bad_label", b'{"id": "e0222", "outlook": "rain", "temperature": 15.5, "humidity": 80.0, "label": ["no"]}'),
    259: ("bad_id", b'{"id": {"day": 259}, "outlook": "sunny", "temperature": 27.0, "label": "no"}'),
    296: ("bad_feature_type", b'{"id": "e0296", "outlook": "sunny", "temperature": "hot", "humidity": 60.0, "label": "yes"}'),
}


def _event(rng: random.Random, n: int) -> dict:
    outlook = rng.choice(["sunny", "overcast", "rain"])
    temperature = round(rng.gauss({"sunny": 26.0, "overcast": 19.0, "rain": 14.0}[outlook], 4.0), 1)
    humidity = round(min(100.0, max(20.0, rng.gauss({"sunny": 65.0, "overcast": 75.0, "rain": 85.0}[outlook], 12.0))), 1)
    windy = rng.random() < 0.4
    if outlook == "overcast":
        play = True
    elif outlook == "sunny":
        play = humidity < 70.0
    else:
        play = not windy
    if rng.random() < 0.10:
        play = not play
    event = {"id": f"e{n:04d}", "outlook": outlook, "temperature": temperature, "humidity": humidity, "windy": windy}
    r = rng.random()
    if r < 0.08:
        pass  # unlabeled: no label field
    elif r < 0.12:
        event["label"] = None  # unlabeled: explicit null
    else:
        event["label"] = "yes" if play else "no"
    return event


def generate(seed: int = SEED, n_lines: int = N_LINES) -> list[tuple[bytes, str | None]]:
    """Every line (without its newline) with the reason it is rejected, ``None`` if valid."""
    rng = random.Random(seed)
    lines: list[tuple[bytes, str | None]] = []
    for n in range(1, n_lines + 1):
        event = _event(rng, n)  # drawn for every line, so the valid ones do not depend on MALFORMED
        if n in MALFORMED:
            reason, raw = MALFORMED[n]
            lines.append((raw, reason))
        else:
            lines.append((json.dumps(event).encode("utf-8"), None))
    return lines


def main(argv: list[str]) -> int:
    out = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).with_name("events.jsonl")
    lines = generate()
    data = b"".join(raw + b"\n" for raw, _ in lines)
    out.write_bytes(data)
    valid = sum(reason is None for _, reason in lines)
    rejected = sum(reason not in (None, "blank") for _, reason in lines)
    print(f"wrote {out}: {len(lines)} lines, {valid} valid events, {rejected} to dead-letter, 1 blank", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
