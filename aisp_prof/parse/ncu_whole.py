"""Whether an ncu export is whole: every parsed launch has a name and metrics, and a `.ncu-rep`'s
blocks, walked by their sizes, end where the file ends.

A launch without a kernel name or without any metric value is what an export cut short (or partly
unreadable) leaves behind: an error, never a stored row (`check_launches_whole`, for CSV and
`.ncu-rep` alike). A CSV cut mid-row is already an error where it is read (`ncu_csv_text`).

`ncu_report` loads what it can of a report cut short (a copy that stopped, a disk that filled) and
says nothing: the blocks before the cut read back, the last kernel comes without a name or
metrics, or no kernel comes at all. The file's framing tells a cut from a short report. As read
from real reports (ncu 2025.3.1, file version 7: tests/fixtures/h200/probe_all.ncu-rep.gz and the
two H100 reports of tests/fixtures/foreign_h100/): the magic `NVR\\0`, a little-endian uint32
length and a file-header message (protobuf; field 1 the version); then blocks, each a uint32
length, a block-header message whose field 5 is the size of the payload that follows, and the
payload. A whole report ends exactly at the end of its last payload.

Only the framing of a version seen is checked; a report of another version is left to
`ncu_report` (and the name/metrics check every parsed launch gets), not refused.
"""
from __future__ import annotations

import logging
import struct
from pathlib import Path

import pandas as pd

from aisp_prof.errors import ExportParseError
from aisp_prof.parse.launch_metrics import LaunchMetrics

log = logging.getLogger(__name__)

MAGIC = b"NVR\x00"
KNOWN_VERSIONS = frozenset({7})
_PAYLOAD_FIELD = 5
CUT_HINT = "the report is truncated or partly unreadable: copy it again, or profile again"


class _Short(Exception):
    """The bytes end inside a field."""


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data):
            raise _Short
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i
        if shift > 63:
            raise ValueError("varint longer than 64 bits")


def _varint_fields(message: bytes) -> dict[int, int]:
    """The varint fields of a protobuf message (the last of each number); other wire types skipped."""
    out: dict[int, int] = {}
    i = 0
    while i < len(message):
        key, i = _varint(message, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            out[number], i = _varint(message, i)
        elif wire == 2:
            size, i = _varint(message, i)
            i += size
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(message):
            raise _Short
    return out


def check_report_frame(path: Path, source: Path) -> None:
    """ExportParseError (naming `source`) if the report at `path` ends inside a block or its
    framing is broken; nothing if it is whole or of a layout not known here. Reads the block
    headers only, seeking over the payloads."""
    total = path.stat().st_size
    with path.open("rb") as f:
        start = f.read(8)
        if start[:4] != MAGIC or len(start) < 8:
            log.debug("%s: no NVR magic; framing not checked", source)
            return
        (head,) = struct.unpack_from("<I", start, 4)
        try:
            version = _varint_fields(f.read(head)).get(1) if 8 + head <= total else None
        except (_Short, ValueError):
            version = None
        if version is None:
            raise ExportParseError(f"{source}: the report ends inside its file header ({total} bytes); {CUT_HINT}")
        if version not in KNOWN_VERSIONS:
            log.debug("%s: report file version %s; framing not checked", source, version)
            return
        pos, block = 8 + head, 0
        while pos < total:
            problem = None
            if pos + 4 > total:
                problem = "inside a block's length"
            else:
                f.seek(pos)
                (size,) = struct.unpack("<I", f.read(4))
                end_header = pos + 4 + size
                try:
                    if end_header > total:
                        raise _Short
                    payload = _varint_fields(f.read(size)).get(_PAYLOAD_FIELD)
                except _Short:
                    problem = "inside a block header"
                except ValueError as exc:
                    raise ExportParseError(f"{source}: block {block} at byte {pos} is not a report block ({exc}); "
                                           f"{CUT_HINT}") from exc
                else:
                    if payload is None:
                        raise ExportParseError(f"{source}: block {block} at byte {pos} has no payload size; "
                                               f"{CUT_HINT}")
                    if end_header + payload > total:
                        problem = f"inside block {block} ({end_header + payload - total} bytes of it missing)"
                    pos = end_header + payload
            if problem:
                raise ExportParseError(f"{source}: the report ends {problem}, at byte {total}; {CUT_HINT}")
            block += 1
    log.debug("%s: %d blocks, whole", source, block)


FILE_HINT = "copy the file again from where it was made, or profile again"


def check_launches_whole(path: Path, launches: pd.DataFrame, metrics: LaunchMetrics) -> None:
    """A launch without a kernel name or without any metric value is what an export cut short
    (or partly unreadable) leaves: an error, never a stored row."""
    names = launches["kernel"]
    nameless = launches["launch_id"][names.isna() | (names.astype(str).str.strip() == "")]
    if len(nameless):
        raise ExportParseError(
            f"{path}: launch {int(nameless.iloc[0])} has no kernel name: the export is truncated or "
            f"partly unreadable; {FILE_HINT}")
    with_values = set(metrics.launch_ids[metrics.mask().any(axis=1)].tolist()) if metrics.values.size else set()
    empty = [int(i) for i in launches["launch_id"] if int(i) not in with_values]
    if empty:
        raise ExportParseError(
            f"{path}: launch {empty[0]} has no metric values: the export is truncated or partly "
            f"unreadable; {FILE_HINT}")
