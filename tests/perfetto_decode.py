#!/usr/bin/env python3
"""Decodes Perfetto traces with the official schema (PyPI `perfetto`) and prints, as JSON,
what the Rust tests check: per file, its tracks, its track events with interned ids
resolved and times in nanoseconds of the trace's primary clock (converted from the clock a
packet names, as trace_processor does), and the problems a reader would meet (ids not
interned, tracks not described, packets that need incremental state a sequence has not
cleared, clocks no snapshot defines).

Usage: perfetto_decode.py TRACE.pftrace...
"""

import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

NEEDS_STATE = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
TYPES = {pb.TrackEvent.TYPE_SLICE_BEGIN: "B", pb.TrackEvent.TYPE_SLICE_END: "E",
         pb.TrackEvent.TYPE_COUNTER: "C", pb.TrackEvent.TYPE_INSTANT: "I"}


def decode(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    tracks, events, problems, clocks = {}, [], [], []
    # Per clock id: (its time, the primary clock's time, its unit in ns) at the snapshot.
    domains, primary = {}, None
    # Per sequence: interned tables, or None before the state is first cleared.
    state = {}
    for packet in trace.packet:
        seq = packet.trusted_packet_sequence_id
        if packet.sequence_flags & CLEARED:
            state[seq] = {"names": {}, "categories": {}, "args": {}}
        if packet.HasField("interned_data"):
            tables = state.get(seq)
            if tables is None:
                problems.append(f"sequence {seq} interns before clearing its state")
                continue
            data = packet.interned_data
            for table, entries in (("names", data.event_names),
                                   ("categories", data.event_categories),
                                   ("args", data.debug_annotation_names)):
                for entry in entries:
                    tables[table][entry.iid] = entry.name
        if packet.HasField("clock_snapshot"):
            snapshot = packet.clock_snapshot
            clocks.append({"primary": snapshot.primary_trace_clock,
                           "clocks": [c.clock_id for c in snapshot.clocks],
                           "units": [c.unit_multiplier_ns for c in snapshot.clocks]})
            primary = snapshot.primary_trace_clock
            at = {c.clock_id: c.timestamp for c in snapshot.clocks}
            for c in snapshot.clocks:
                domains[c.clock_id] = (c.timestamp, at.get(primary), c.unit_multiplier_ns or 1)
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            track = {"name": d.name, "parent": d.parent_uuid if d.HasField("parent_uuid") else None}
            if d.HasField("process"):
                track["pid"] = d.process.pid
                track["name"] = d.process.process_name
            if d.HasField("thread"):
                track["pid"] = d.thread.pid
                track["tid"] = d.thread.tid
            if d.HasField("counter"):
                track["counter"] = True
                track["unit"] = d.counter.unit
            if d.uuid in tracks and tracks[d.uuid] != track:
                problems.append(f"track {d.uuid} described twice, differently")
            tracks[d.uuid] = track
        if not packet.HasField("track_event"):
            continue
        e = packet.track_event
        if e.track_uuid not in tracks:
            problems.append(f"event on track {e.track_uuid} before its descriptor")
        tables = state.get(seq)
        interns = e.HasField("name_iid") or len(e.category_iids) or any(
            a.HasField("name_iid") for a in e.debug_annotations)
        if interns and (tables is None or not packet.sequence_flags & NEEDS_STATE):
            problems.append(f"sequence {seq} uses interned ids without incremental state")
            continue

        def resolve(table, iid):
            if iid not in tables[table]:
                problems.append(f"{table} iid {iid} of sequence {seq} not interned")
            return tables[table].get(iid)

        ts = packet.timestamp
        if packet.HasField("timestamp_clock_id") and packet.timestamp_clock_id != primary:
            domain = domains.get(packet.timestamp_clock_id)
            if domain is None or domain[1] is None:
                problems.append(f"clock {packet.timestamp_clock_id} is not in a snapshot")
                continue
            ts = domain[1] + (ts - domain[0]) * domain[2]
        event = {"ts": ts, "type": TYPES.get(e.type, str(e.type)),
                 "track": e.track_uuid}
        if e.HasField("name_iid"):
            event["name"] = resolve("names", e.name_iid)
        if e.HasField("name"):
            event["name"] = e.name
        if len(e.category_iids):
            event["category"] = resolve("categories", e.category_iids[0])
        def annotation(a):
            name = resolve("args", a.name_iid) if a.HasField("name_iid") else a.name
            kind = a.WhichOneof("value")
            value = getattr(a, kind) if kind else None
            # Pointers as readers show them, the way the SDK prints addresses.
            return name, f"{value:#x}" if kind == "pointer_value" else value

        if len(e.debug_annotations):
            event["args"] = dict(annotation(a) for a in e.debug_annotations)
        if len(e.flow_ids):
            event["flows"] = list(e.flow_ids)
        if len(e.terminating_flow_ids):
            event["terminating"] = list(e.terminating_flow_ids)
        if e.HasField("counter_value"):
            event["value"] = e.counter_value
        if e.HasField("double_counter_value"):
            event["value"] = e.double_counter_value
        events.append(event)
    return {"path": path, "tracks": {str(k): v for k, v in tracks.items()},
            "events": events, "problems": problems, "clocks": clocks}


if __name__ == "__main__":
    json.dump([decode(path) for path in sys.argv[1:]], sys.stdout)
