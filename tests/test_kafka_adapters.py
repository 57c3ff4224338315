"""The Kafka connector is written once over two thin client adapters (``connectors/kafka/_adapter.py``).

No broker needed: these read the source. Each role (source, sink, transaction,
model topic) lives in one module; only ``_kafka_python.py`` imports kafka-python
and only ``_confluent.py`` confluent-kafka (on first use); no passage of six
lines repeats between the two adapters; each implements the adapter protocol.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from connectors.kafka import _adapter, _confluent, _kafka_python

ROOT = Path(__file__).resolve().parents[1]
KAFKA = ROOT / "connectors" / "kafka"
ADAPTERS = {"kafka": KAFKA / "_kafka_python.py", "confluent_kafka": KAFKA / "_confluent.py"}
WINDOW = 6


def windows(text: str, size: int = WINDOW) -> dict[tuple[str, ...], int]:
    """Each run of ``size`` non-blank lines, whitespace removed, with the line number it starts at."""
    lines = [(n, "".join(line.split())) for n, line in enumerate(text.splitlines(), 1)]
    lines = [(n, line) for n, line in lines if line]
    return {tuple(line for _, line in lines[i:i + size]): lines[i][0] for i in range(len(lines) - size + 1)}


def repeated(a: str, b: str) -> list[tuple[int, int]]:
    """``(line in a, line in b)`` of every passage of :data:`WINDOW` lines found in both."""
    wa, wb = windows(a), windows(b)
    return sorted((wa[w], wb[w]) for w in wa.keys() & wb.keys())


def test_the_window_check_finds_a_repeated_passage_and_ignores_indentation():
    passage = "\n".join(f"x{i} = {i}" for i in range(WINDOW))
    a = f"import a\n{passage}\nrest = 1\n"
    b = "def f():\n" + "\n".join("    " + line for line in passage.splitlines()) + "\n"
    assert repeated(a, b) == [(2, 2)]
    assert repeated(a, b.replace(f"x{WINDOW - 1}", "y")) == []


def test_no_passage_of_six_lines_repeats_between_the_two_client_adapters():
    kafka_python, confluent = (path.read_text() for path in ADAPTERS.values())
    assert repeated(kafka_python, confluent) == []


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_its_adapter_imports_a_client_library():
    for library, adapter in ADAPTERS.items():
        importers = sorted(str(path.relative_to(ROOT)) for folder in ("connectors", "stream_nb")
                           for path in (ROOT / folder).rglob("*.py") if library in _imports(path))
        assert importers == [str(adapter.relative_to(ROOT))], library


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")} | set(typing.get_type_hints(protocol))


@pytest.mark.parametrize("module", [_kafka_python, _confluent], ids=["kafka-python", "confluent"])
def test_each_adapter_implements_every_part_of_the_protocol(module):
    (adapter,) = [cls for cls in vars(module).values() if isinstance(cls, type) and cls.__module__ == module.__name__
                  and {"consumer", "producer", "reader"} <= set(vars(cls))]
    for part in (_adapter.Consumer, _adapter.Producer):
        members = _members(part) - {"errors", "failed", "first_error", "calls_back_on_poll"}
        matching = [cls.__name__ for cls in vars(module).values() if isinstance(cls, type)
                    and cls.__module__ == module.__name__ and members <= set(dir(cls))]
        assert len(matching) == 1, (part.__name__, matching)
    assert _members(_adapter.Adapter) - {"errors"} <= set(dir(adapter))


def test_connectors_kafka_imports_without_confluent_kafka_and_does_not_load_it():
    code = ("import sys; sys.modules['confluent_kafka'] = None\n"
            "import connectors.kafka as kc\n"
            "source, sink = kc._factories.split({'input_topic': 'in', 'linger_ms': '3'})\n"
            "print(sorted(kc.CLIENTS), sink)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "['confluent', 'kafka-python'] {'linger_ms': '3'}"
    lazily = subprocess.run([sys.executable, "-c", "import sys, connectors.kafka; print('confluent_kafka' in "
                             "sys.modules, 'kafka' in sys.modules)"], capture_output=True, text=True, timeout=120,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert lazily.stdout.split() == ["False", "True"], lazily.stderr


def test_the_feedback_topic_keeps_the_range_assignor_on_either_client():
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    from connectors.kafka import ConfluentSource, KafkaSource
    from stream_nb.exceptions import ConfigError

    with pytest.raises(ConfigError, match="KafkaSource: the partition assignment strategy must stay range"):
        KafkaSource(topic="in", feedback_topic="labels", partition_assignment_strategy=(RoundRobinPartitionAssignor,))
    pytest.importorskip("confluent_kafka")
    with pytest.raises(ConfigError, match=r"KafkaSource \(confluent\): the partition assignment strategy must stay"):
        ConfluentSource(topic="in", feedback_topic="labels", **{"partition.assignment.strategy": "roundrobin"})
