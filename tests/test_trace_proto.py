"""Traces in Perfetto's protobuf format (python/vcpusim/trace_proto.py): the same tracks, slices,
instants, flows and counters as the JSON trace of the same run, read back with the same protos;
written by Result.write and `vcpusim run --trace-format`."""

from __future__ import annotations

import json

import pytest
import vcpusim
from conftest import QUICKSTART, run_cli
from vcpusim import trace_proto


@pytest.fixture(scope="module")
def traced():
    # 30 ms of the quickstart: every kind of record (slices, IPI flows bound to slices, lock
    # hand-off flows, instants, counters).
    return vcpusim.run(vcpusim.load(QUICKSTART).replace(duration="30ms"), trace=True)


def test_the_protobuf_trace_holds_what_the_json_trace_holds(traced, tmp_path):
    path = tmp_path / "t.pftrace"
    with open(path, "wb") as f:
        trace_proto.write(traced.trace_json, f)
    got = trace_proto.counts(path.read_bytes())
    want = trace_proto.json_counts(traced.trace_json)
    assert got == want
    assert want["slices"] > 10_000 and want["flows"] > 10 and want["counter_tracks"] > 5 and want["instants"] > 0
    assert path.stat().st_size < len(traced.trace_json.encode()) * 0.6, "about half the JSON's size"


def test_slices_keep_their_track_name_and_times(traced, tmp_path):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    path = tmp_path / "t.pftrace"
    with open(path, "wb") as f:
        trace_proto.write(traced.trace_json, f)
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    names = {p.track_descriptor.uuid: p.track_descriptor.name for p in trace.packet if p.HasField("track_descriptor")}
    first = next(e for e in json.loads(traced.trace_json)["traceEvents"] if e.get("ph") == "X" and e.get("dur", 0) > 0)
    begin = next(p for p in trace.packet
                 if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
                 and p.track_event.name == first["name"])
    assert begin.timestamp == round(first["ts"] * 1000)
    assert names[begin.track_event.track_uuid] == traced.trace_tracks()[(first["pid"], first["tid"])]
    # Every packet is on one sequence, in time order.
    stamps = [p.timestamp for p in trace.packet if p.HasField("track_event")]
    assert stamps == sorted(stamps)


def test_write_takes_the_format_and_leaves_one_trace_file(traced, tmp_path, monkeypatch):
    out = tmp_path / "out"
    traced.write(out, trace_format="perfetto")
    assert (out / "trace.pftrace").exists() and not (out / "trace.json").exists()
    traced.write(out, trace_format="json")
    assert (out / "trace.json").exists() and not (out / "trace.pftrace").exists()
    traced.write(out)  # auto: a small trace stays JSON
    assert (out / "trace.json").exists()
    monkeypatch.setattr(trace_proto, "AUTO_PROTOBUF_BYTES", 1000)
    traced.write(out)  # auto: above the threshold, protobuf
    assert (out / "trace.pftrace").exists() and not (out / "trace.json").exists()
    with pytest.raises(ValueError, match="trace_format: expected one of auto, json, perfetto, got 'xml'"):
        traced.write(out, trace_format="xml")


def test_the_command_line_writes_the_format_asked_for(tmp_path):
    done = run_cli("run", QUICKSTART, "--set", "run.duration=20ms", "--out", tmp_path / "o", "--trace",
                   "--trace-format", "perfetto", "-q")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o" / "trace.pftrace").exists() and "trace.pftrace" in done.stdout
    bad = run_cli("run", QUICKSTART, "--out", tmp_path / "p", "--trace", "--trace-format", "xml")
    assert bad.returncode == 2 and "--trace-format: expected one of auto, json, perfetto" in bad.stderr
