"""connectors.jsonl: positions, blank and overlong lines, seeking, pipes, and the sink."""

from __future__ import annotations

import doctest
import os
import threading
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import connectors.jsonl
from connectors.jsonl import JsonLinesSink, JsonLinesSource, make_dead_letter_sink, make_sink, make_source
from stream_nb import NaiveBayes
from stream_nb.engine import CountsBlankLines, Engine, NamedInput, Pausable, ReportsLag, ResumesByPolicy
from stream_nb.exceptions import ConfigError


def write(tmp_path, data: bytes, name="in.jsonl") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def drain(source, max_records=1000, timeout=0.05):
    out = []
    while not source.exhausted:
        out.extend(source.poll(max_records, timeout))
    return out


def test_module_doctests_pass():
    # pyproject's testpaths cover tests/ and stream_nb/ only, so run these here
    result = doctest.testmod(connectors.jsonl, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_positions_are_byte_offsets_of_the_next_line_and_line_numbers_count_every_line(tmp_path):
    data = b'{"a": 1}\n\n  \t\n{"a": 2}\r\n{"a": 3}'
    path = write(tmp_path, data)
    source = make_source({"path": path})
    records = drain(source, max_records=2)
    assert [r.value for r in records] == [b'{"a": 1}', b'{"a": 2}', b'{"a": 3}']
    assert [r.position for r in records] == [
        {"file": path, "line": 1, "byte": 0},
        {"file": path, "line": 4, "byte": 14},
        {"file": path, "line": 5, "byte": 24},
    ]
    assert [r.next_position for r in records] == [9, 24, len(data)]
    assert {r.partition for r in records} == {path}
    assert source.blank_lines == 2
    assert source.poll(10, 0) == [] and source.exhausted
    source.close()


def test_final_line_without_newline_counts_and_trailing_newline_adds_nothing(tmp_path):
    with_nl = make_source({"path": write(tmp_path, b'{"a": 1}\n{"a": 2}\n', "a.jsonl")})
    without = make_source({"path": write(tmp_path, b'{"a": 1}\n{"a": 2}', "b.jsonl")})
    assert [r.value for r in drain(with_nl)] == [r.value for r in drain(without)] == [b'{"a": 1}', b'{"a": 2}']
    assert with_nl.blank_lines == without.blank_lines == 0


def test_empty_file_is_exhausted_at_once(tmp_path):
    source = make_source({"path": write(tmp_path, b"")})
    assert source.poll(10, 1.0) == []
    assert source.exhausted


def test_small_reads_give_the_same_records(tmp_path):
    data = b"".join(orjson.dumps({"i": i, "pad": "x" * (i % 13)}) + b"\n" for i in range(200))
    path = write(tmp_path, data)
    whole = drain(make_source({"path": path}))
    tiny = drain(make_source({"path": path, "read_size": 7}), max_records=3)
    assert whole == tiny
    assert len(whole) == 200


lines_strategy = st.lists(
    st.one_of(st.binary(max_size=40).filter(lambda b: b"\n" not in b), st.sampled_from([b"", b" ", b"\r", b"\xef\xbb\xbf"])),
    max_size=30,
)
#: lines that need no care (no blank, no carriage return): a read of them is taken at once
plain_lines = st.lists(st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b
                                                                  and b.strip(b" \t") not in (b"", b"\xef\xbb\xbf")),
                       max_size=30)


@settings(max_examples=150, deadline=None)
@given(lines=st.one_of(lines_strategy, plain_lines), final_newline=st.booleans(),
       read_size=st.one_of(st.integers(1, 50), st.just(65536)), batch=st.integers(1, 7))
def test_any_split_of_any_lines_gives_the_same_records(tmp_path_factory, lines, final_newline, read_size, batch):
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = write(tmp_path_factory.mktemp("prop"), data)
    source = make_source({"path": path, "read_size": read_size})
    records = drain(source, max_records=batch)
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # after a final newline there is no further line
    expected, offset, blank = [], 0, 0
    for number, line in enumerate(pieces, 1):
        value = line[:-1] if line.endswith(b"\r") else line
        end = min(offset + len(line) + 1, len(data))
        if value.strip(b" \t\r") not in (b"", b"\xef\xbb\xbf"):  # a lone byte order mark is blank too
            expected.append((value, number, offset, end))
        else:
            blank += 1
        offset = end
    assert [(r.value, r.position["line"], r.position["byte"], r.next_position) for r in records] == expected
    assert source.blank_lines == blank
    source.close()


def test_seek_resumes_at_a_line_start_with_the_right_line_numbers(tmp_path):
    data = b'{"a": 1}\n\n{"a": 2}\n{"a": 3}\n'
    path = write(tmp_path, data)
    first = drain(make_source({"path": path}))
    source = make_source({"path": path})
    source.seek({path: first[0].next_position})
    rest = drain(source)
    assert rest == first[1:]
    source = make_source({"path": path})
    source.seek({path: len(data)})
    assert drain(source) == []


def test_seek_errors_are_clear(tmp_path):
    path = write(tmp_path, b'{"a": 1}\n{"a": 2}\n')
    source = make_source({"path": path})
    with pytest.raises(ConfigError, match="not the start of a line"):
        source.seek({path: 3})
    with pytest.raises(ConfigError, match="the file has 18 bytes"):
        source.seek({path: 99})
    with pytest.raises(ConfigError, match=r"cannot seek partition\(s\) \['other'\]"):
        source.seek({"other": 0})
    with pytest.raises(ConfigError, match="byte offset >= 0"):
        source.seek({path: -1})


def test_a_pipe_cannot_seek_but_poll_waits_at_most_the_timeout(tmp_path):
    read_fd, write_fd = os.pipe()
    try:
        source = make_source({"path": f"/dev/fd/{read_fd}"})
        started = time.monotonic()
        assert source.poll(10, 0.2) == []
        assert 0.15 < time.monotonic() - started < 2.0
        assert not source.exhausted
        with pytest.raises(ConfigError, match="not a regular file and cannot seek"):
            source.seek({source.partition: 5})
        source.seek({source.partition: 0})  # where it already is: fine

        os.write(write_fd, b'{"a": 1}\n{"a"')
        assert [r.value for r in source.poll(10, 1.0)] == [b'{"a": 1}']
        # a partial line waits for the rest
        assert source.poll(10, 0.05) == []
        threading.Timer(0.1, os.write, (write_fd, b': 2}\n')).start()
        assert [r.value for r in source.poll(10, 2.0)] == [b'{"a": 2}']
        os.close(write_fd)
        write_fd = -1
        assert source.poll(10, 1.0) == []
        assert source.exhausted
        source.close()
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_an_overlong_line_is_cut_and_dead_lettered_as_oversize(tmp_path):
    long_line = b'{"a": "' + b"x" * 5000 + b'"}'
    path = write(tmp_path, b'{"a": "short"}\n' + long_line + b'\n{"a": "after"}')
    source = make_source({"path": path, "max_line_bytes": 100, "read_size": 64})
    records = drain(source)
    assert [len(r.value) for r in records] == [14, 101, 14]
    assert records[1].position == {"file": path, "line": 2, "byte": 15}
    assert records[1].next_position == 15 + len(long_line) + 1
    # the engine rejects it, as long as max_line_bytes >= max_event_bytes
    source = make_source({"path": path, "max_line_bytes": 100, "read_size": 64})
    out = make_sink({"path": str(tmp_path / "out.jsonl")})
    dlq = make_sink({"path": str(tmp_path / "dlq.jsonl")})
    Engine(NaiveBayes(), source, out, dlq, config={"max_event_bytes": 100}).run()
    out.close()
    dlq.close()
    letters = [orjson.loads(x) for x in (tmp_path / "dlq.jsonl").read_bytes().splitlines()]
    assert [(d["reason"], d["source"]["line"]) for d in letters] == [("oversize", 2)]
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == 2


def test_an_overlong_last_line_without_newline(tmp_path):
    path = write(tmp_path, b"{}\n" + b"y" * 300)
    records = drain(make_source({"path": path, "max_line_bytes": 10, "read_size": 16}))
    assert [(len(r.value), r.position["line"], r.next_position) for r in records] == [(2, 1, 3), (11, 2, 303)]


def test_the_source_declares_its_optional_capabilities(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    source = JsonLinesSource(path=str(path))
    try:
        for capability in (NamedInput, CountsBlankLines, ReportsLag):
            assert isinstance(source, capability), capability.__name__
        for capability in (ResumesByPolicy, Pausable):  # a file resumes by seek(), and is never paused
            assert not isinstance(source, capability), capability.__name__
    finally:
        source.close()


def test_an_overlong_line_reports_its_whole_size_in_the_record_and_the_dead_letter(tmp_path):
    long_line = b'{"a": "' + b"x" * 5000 + b'"}'
    path = write(tmp_path, long_line + b"\r\n" + long_line + b"\n" + b"z" * 3000 + b"\r\n" + b"y" * 700)
    records = drain(make_source({"path": path, "max_line_bytes": 100, "read_size": 64}))
    sizes = [len(long_line), len(long_line), 3000, 700]
    assert [r.size for r in records] == sizes
    assert [len(r.value) for r in records] == [101] * 4
    out, dlq = make_sink({"path": str(tmp_path / "out.jsonl")}), make_sink({"path": str(tmp_path / "dlq.jsonl")})
    source = make_source({"path": path, "max_line_bytes": 100, "read_size": 64})
    Engine(NaiveBayes(), source, out, dlq, config={"max_event_bytes": 100, "dead_letter_max_value_bytes": 500}).run()
    out.close()
    dlq.close()
    letters = [orjson.loads(x) for x in (tmp_path / "dlq.jsonl").read_bytes().splitlines()]
    assert [(d["reason"], d["size"], d["error"]) for d in letters] == [
        ("oversize", n, f"event is {n} bytes, more than max_event_bytes=100") for n in sizes
    ]
    # 101 bytes were kept, fewer than the event: it is marked cut even though the copy limit is higher
    assert all(d["truncated"] is True and len(d["value"]) == 101 for d in letters)


def test_a_line_that_fits_once_its_carriage_return_is_dropped_is_whole(tmp_path):
    line = b'{"a": "' + b"x" * 91 + b'"}'  # 100 bytes
    path = write(tmp_path, line + b"\r\n" + line + b"\r")
    for read_size in (7, 64, 101, 4096):
        records = drain(make_source({"path": path, "max_line_bytes": 100, "read_size": read_size}))
        assert [(r.value, r.size) for r in records] == [(line, None), (line, None)], read_size


@settings(max_examples=100, deadline=None)
@given(lengths=st.lists(st.integers(0, 60), min_size=1, max_size=8), crlf=st.booleans(),
       read_size=st.integers(1, 40), max_line=st.integers(1, 30))
def test_any_overlong_line_keeps_a_prefix_and_reports_its_whole_size(tmp_path_factory, lengths, crlf, read_size,
                                                                     max_line):
    lines = [bytes([97 + i % 26]) * n for i, n in enumerate(lengths)]
    data = (b"\r\n" if crlf else b"\n").join(lines)
    path = write(tmp_path_factory.mktemp("cut"), data)
    records = drain(make_source({"path": path, "read_size": read_size, "max_line_bytes": max_line}), max_records=3)
    expected = [(line[: max_line + 1], len(line) if len(line) > max_line else None) for line in lines if line]
    assert [(r.value, r.size) for r in records] == expected


def test_a_lone_byte_order_mark_is_a_blank_line_and_one_before_an_event_reaches_the_decoder(tmp_path):
    path = write(tmp_path, b'\xef\xbb\xbf{"a": 1}\n\xef\xbb\xbf\r\n\xef\xbb\xbf{"a": 2}\n')
    source = make_source({"path": path})
    records = drain(source)
    assert [r.value for r in records] == [b'\xef\xbb\xbf{"a": 1}', b'\xef\xbb\xbf{"a": 2}']
    assert source.blank_lines == 1


def test_source_settings_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="unknown JSON-lines source setting 'file'; expected one of: follow, max_line_bytes, path, read_size"):
        JsonLinesSource(file="x")
    with pytest.raises(ConfigError, match="read_size must be an integer >= 1"):
        JsonLinesSource(path=write(tmp_path, b""), read_size=0)
    with pytest.raises(ConfigError, match="cannot open input '.*nope.jsonl': No such file"):
        JsonLinesSource(path=str(tmp_path / "nope.jsonl"))


# ----------------------------------------------------------------------- sink


def test_sink_writes_lines_appends_by_default_and_can_replace(tmp_path):
    path = str(tmp_path / "out.jsonl")
    sink = make_sink({"path": path})
    sink.send(b'{"a":1}', key=b"ignored")
    sink.send(b'{"a":2}')
    sink.flush()
    assert (tmp_path / "out.jsonl").read_bytes() == b'{"a":1}\n{"a":2}\n'
    sink.close()
    sink.close()  # idempotent
    again = make_sink({"path": path})
    again.send(b"3")
    again.close()
    assert (tmp_path / "out.jsonl").read_bytes() == b'{"a":1}\n{"a":2}\n3\n'
    # mode "replace" (the daemon without snapshots): a new file, in place of the old one at the first flush
    reader = open(path, "rb")  # a reader of the old file keeps it whole
    fresh = make_sink({"path": path, "mode": "replace"})
    fresh.send(b"4")
    assert (tmp_path / "out.jsonl").read_bytes() == b'{"a":1}\n{"a":2}\n3\n'  # not flushed yet: the old file
    fresh.flush()
    assert (tmp_path / "out.jsonl").read_bytes() == b"4\n"
    fresh.send(b"5")
    fresh.close()
    assert (tmp_path / "out.jsonl").read_bytes() == b"4\n5\n"
    assert reader.read() == b'{"a":1}\n{"a":2}\n3\n'
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # nothing left aside
    # a run that stops before its first flush, having sent nothing (a start-up error), leaves the file as it was
    make_sink({"path": path, "mode": "replace"}).close()
    assert (tmp_path / "out.jsonl").read_bytes() == b"4\n5\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_sink_refuses_a_value_with_a_newline(tmp_path):
    sink = make_sink({"path": str(tmp_path / "o.jsonl")})
    with pytest.raises(ValueError, match="cannot contain a newline"):
        sink.send(b'{"a":\n1}')


def test_dead_letter_sink_defaults_to_stderr_and_output_to_stdout(capfd):
    out, dlq = make_sink({}), make_dead_letter_sink({})
    assert (out.name, dlq.name) == ("stdout", "stderr")
    out.send(b'{"o":1}')
    dlq.send(b'{"d":1}')
    out.flush()
    dlq.flush()
    captured = capfd.readouterr()
    assert captured.out == '{"o":1}\n'
    assert captured.err == '{"d":1}\n'


def test_sink_flush_to_a_device_does_not_fsync(tmp_path):
    sink = make_sink({"path": os.devnull})
    sink.send(b"{}")
    sink.flush()  # fsync of /dev/null would fail with EINVAL
    sink.close()


def test_sink_settings_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="unknown JSON-lines sink setting 'fsynk'"):
        JsonLinesSink(fsynk=True)
    with pytest.raises(ConfigError, match="stream must be 'stdout' or 'stderr'"):
        JsonLinesSink(stream="stdin")
    with pytest.raises(ConfigError, match="fsync must be true or false"):
        JsonLinesSink(path=str(tmp_path / "x"), fsync="yes")
    with pytest.raises(ConfigError, match="mode must be 'append', 'replace' or 'snapshots', got 'truncate'"):
        JsonLinesSink(path=str(tmp_path / "x"), mode="truncate")
    with pytest.raises(ConfigError, match="cannot open output"):
        JsonLinesSink(path=str(tmp_path / "no" / "such" / "dir.jsonl"))
