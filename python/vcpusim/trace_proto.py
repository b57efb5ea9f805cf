"""Schedule traces in Perfetto's protobuf format (``trace.pftrace``), from the Chrome JSON trace
the engine records: the same tracks, slices, instants, flows and counters, a fraction of the
size, and read by https://ui.perfetto.dev without the JSON importer's limits.

::

    JSON (engine)                         protobuf (Perfetto TrackEvent)
    "M" process_name / thread_name   ->   TrackDescriptor: a process track, named child tracks
    "X" slice (ts, dur)              ->   TYPE_SLICE_BEGIN / TYPE_SLICE_END on the child track
    "i" instant                      ->   TYPE_INSTANT
    "s" / "f" flow, bind_id + flow_* ->   flow_ids / terminating_flow_ids on the events they bind
    "C" counter (one per arg)        ->   a counter track per (process, name), TYPE_COUNTER

Built with the ``perfetto`` package's generated protos and its streaming builder
(``perfetto.trace_builder.proto_builder``). :func:`counts` reads a trace back with the same protos
(the tests compare them with the JSON's own counts).
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

#: A Chrome JSON trace longer than this is written as protobuf by default (``trace_format="auto"``):
#: Perfetto's JSON importer loads the whole file into the browser's memory.
AUTO_PROTOBUF_BYTES = 64 * 2**20

#: One packet sequence for the whole trace (no interning, so no incremental state).
_SEQUENCE = 1


def _protos():
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
        from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder
    except ImportError as e:  # pragma: no cover - a dependency of the package
        raise ImportError("writing a Perfetto protobuf trace needs the perfetto package: pip install perfetto") from e
    return pb, StreamingTraceProtoBuilder


def _ns(ts_us: float) -> int:
    """A Chrome trace time (µs, three decimals from the engine's ns) in ns."""
    return round(ts_us * 1000)


def _annotate(event, args: dict[str, Any]) -> None:
    for key, value in args.items():
        a = event.debug_annotations.add()
        a.name = str(key)
        if isinstance(value, bool):
            a.bool_value = value
        elif isinstance(value, int):
            a.int_value = value
        elif isinstance(value, float):
            a.double_value = value
        else:
            a.string_value = str(value)


def write(trace_json: str, out: BinaryIO) -> None:
    """Write the JSON trace ``trace_json`` to ``out`` in Perfetto's protobuf format."""
    pb, Builder = _protos()
    doc = json.loads(trace_json)
    events = doc.get("traceEvents", [])
    builder = Builder(out)

    def packet(ts: int | None = None):
        p = builder.create_packet()
        p.trusted_packet_sequence_id = _SEQUENCE
        if ts is not None:
            p.timestamp = ts
        return p

    # Tracks: a process track per pid, a child per (pid, tid), a counter track per (pid, series).
    uuids: dict[tuple, int] = {}

    def uuid(key: tuple) -> int:
        return uuids.setdefault(key, len(uuids) + 1)

    process_names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    thread_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                    if e.get("ph") == "M" and e.get("name") == "thread_name"}
    first = True
    for pid, name in process_names.items():
        p = packet()
        if first:
            p.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
            first = False
        p.track_descriptor.uuid = uuid(("process", pid))
        p.track_descriptor.process.pid = int(pid) + 1  # pid 0 is the kernel's in Perfetto
        p.track_descriptor.process.process_name = name
        builder.write_packet(p)
    for (pid, tid), name in thread_names.items():
        p = packet()
        p.track_descriptor.uuid = uuid(("thread", pid, tid))
        p.track_descriptor.parent_uuid = uuid(("process", pid))
        p.track_descriptor.name = name
        builder.write_packet(p)
    counter_tracks: dict[tuple, int] = {}
    for e in events:
        if e.get("ph") != "C":
            continue
        for key in e.get("args", {}):
            series = e["name"] if key == "value" else f"{e['name']} {key}"
            if (e["pid"], series) not in counter_tracks:
                p = packet()
                u = uuid(("counter", e["pid"], series))
                counter_tracks[(e["pid"], series)] = u
                p.track_descriptor.uuid = u
                p.track_descriptor.parent_uuid = uuid(("process", e["pid"]))
                p.track_descriptor.name = series
                p.track_descriptor.counter.SetInParent()
                builder.write_packet(p)

    def track_of(e: dict) -> int:
        if "tid" in e and (e["pid"], e["tid"]) in thread_names:
            return uuid(("thread", e["pid"], e["tid"]))
        return uuid(("process", e["pid"]))

    # Events in time order; at one instant, slice ends before what begins (back-to-back slices
    # on one track), in the JSON's order otherwise.
    timeline: list[tuple[int, int, int, dict, str]] = []
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph == "X":
            start = _ns(e["ts"])
            timeline.append((start, 1, i, e, "begin"))
            timeline.append((start + round(e.get("dur", 0) * 1000), 0 if e.get("dur", 0) > 0 else 2, i, e, "end"))
        elif ph in ("i", "I", "s", "f", "C"):
            timeline.append((_ns(e["ts"]), 1, i, e, ph))
    timeline.sort(key=lambda t: (t[0], t[1], t[2]))
    T = pb.TrackEvent
    for ts, _, _, e, what in timeline:
        if what == "C":
            for key, value in e.get("args", {}).items():
                series = e["name"] if key == "value" else f"{e['name']} {key}"
                p = packet(ts)
                p.track_event.type = T.TYPE_COUNTER
                p.track_event.track_uuid = counter_tracks[(e["pid"], series)]
                p.track_event.double_counter_value = float(value)
                builder.write_packet(p)
            continue
        p = packet(ts)
        ev = p.track_event
        ev.track_uuid = track_of(e)
        if what == "end":
            ev.type = T.TYPE_SLICE_END
            builder.write_packet(p)
            continue
        ev.name = e.get("name", "")
        if e.get("cat"):
            ev.categories.append(e["cat"])
        _annotate(ev, e.get("args", {}))
        if what == "begin":
            ev.type = T.TYPE_SLICE_BEGIN
            if "bind_id" in e:
                (ev.flow_ids if e.get("flow_out") else ev.terminating_flow_ids).append(int(e["bind_id"]))
        else:
            # An instant; a flow's start ("s") or end ("f") is an instant on its track carrying it.
            ev.type = T.TYPE_INSTANT
            if what == "s":
                ev.flow_ids.append(_flow_id(e))
            elif what == "f":
                ev.terminating_flow_ids.append(_flow_id(e))
        builder.write_packet(p)
    out.flush()


def _flow_id(e: dict) -> int:
    """A JSON flow's id, kept apart from the bind ids of slice flows (which the engine numbers
    from 2^32)."""
    return int(e["id"]) | (1 << 62)


def counts(data: bytes) -> dict[str, int]:
    """What a protobuf trace holds: ``tracks`` (process and child tracks), ``counter_tracks``,
    ``slices``, ``instants``, ``counter_values``, ``flows`` (distinct flow ids)."""
    pb, _ = _protos()
    trace = pb.Trace()
    trace.ParseFromString(data)
    c = {"tracks": 0, "counter_tracks": 0, "slices": 0, "slice_ends": 0, "instants": 0, "counter_values": 0, "flows": 0}
    flows: set[int] = set()
    T = pb.TrackEvent
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            if p.track_descriptor.HasField("counter"):
                c["counter_tracks"] += 1
            else:
                c["tracks"] += 1
        elif p.HasField("track_event"):
            ev = p.track_event
            c["slices"] += ev.type == T.TYPE_SLICE_BEGIN
            c["slice_ends"] += ev.type == T.TYPE_SLICE_END
            c["instants"] += ev.type == T.TYPE_INSTANT
            c["counter_values"] += ev.type == T.TYPE_COUNTER
            flows.update(ev.flow_ids)
            flows.update(ev.terminating_flow_ids)
    c["flows"] = len(flows)
    return c


def json_counts(trace_json: str) -> dict[str, int]:
    """The same counts taken from a Chrome JSON trace (what :func:`write` must preserve)."""
    events = json.loads(trace_json).get("traceEvents", [])
    slices = [e for e in events if e.get("ph") == "X"]
    series = {(e["pid"], e["name"], k) for e in events if e.get("ph") == "C" for k in e.get("args", {})}
    flows = {_flow_id(e) for e in events if e.get("ph") in ("s", "f")} | {int(e["bind_id"]) for e in slices if "bind_id" in e}
    return {
        "tracks": sum(1 for e in events if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name")),
        "counter_tracks": len(series),
        "slices": len(slices),
        "slice_ends": len(slices),
        "instants": sum(1 for e in events if e.get("ph") in ("i", "I", "s", "f")),
        "counter_values": sum(len(e.get("args", {})) for e in events if e.get("ph") == "C"),
        "flows": len(flows),
    }
