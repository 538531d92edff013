"""Whether a `.ncu-rep` is whole, from its block framing, before `ncu_report` reads it.

`ncu_report` loads what it can of a report cut short (a copy that stopped, a disk that filled) and
says nothing: the blocks before the cut read back, the last kernel comes without a name or
metrics, or fewer kernels come. The file's framing tells some cuts from a short report, not all.

The layout, as read from every real report at hand (ncu 2025.3.1, file version 7: a 22 MB H200
report once in the tree as tests/fixtures/h200/probe_all.ncu-rep.gz, tests/fixtures/h200/cluster_group.ncu-rep.gz,
and 11 reports of H100 runs not committed, issue 16's two foreign captures and nine aisp-prof runs of
chapters 10 and 14, 12 to 80 blocks each): the
magic `NVR\\0`, a little-endian uint32 length and a file-header message (protobuf) whose only field
is the version (1: 7). Then blocks, each a uint32 length, a block-header message and a payload.
Block-header fields: 1 how many modules the payload holds (0/1: the kernel's cubin, an ELF),
2 how many results (0/1: one profiled kernel launch), 3 a session message (no payload), 4 the
metric-name string table (first result only), 5 the payload's size, 6 the process (pid, host,
executable). The order is always: the process block, [a module], the first result, then seven
session blocks (device attributes, the CUDA/PerfWorks/ncu versions, the system, and last the ncu
command line: session field 11), then [a module] + result per further kernel; a module only where
the kernel's module was not written yet, and always right before that kernel's result. A whole
report ends exactly at the end of its last payload.

So a report is cut (checked here) when it ends inside a block, right after a module (before the
result it was written for), or after its first result but before the session's command-line block.

What no framing can tell: nothing counts the results, in the file header, in any block header or
in a trailer (there is none; ncu appends as it profiles and does not know how many kernels will
come). A report cut exactly after a result block, or after the command-line block, is byte for byte
a whole report of fewer kernels (tests/unit/test_ncu_rep_cuts.py cuts a real report at every boundary).
For aisp-prof's own run folders, run.json records how many kernels ncu said it profiled, and the
import compares (`ncu_whole.check_launch_count`).

Only the framing of a version seen is checked; a report of another version is left to
`ncu_report` (and the name/metrics check every parsed launch gets), not refused.
"""
from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path

from aisp_prof.errors import ExportParseError

log = logging.getLogger(__name__)

MAGIC = b"NVR\x00"
KNOWN_VERSIONS = frozenset({7})
_MODULES, _RESULTS, _SESSION, _PAYLOAD = 1, 2, 3, 5     # block-header fields
_COMMAND_LINE = 11                                      # session field: ncu's command line
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


def _fields(message: bytes) -> tuple[dict[int, int], dict[int, bytes]]:
    """The varint fields and the length-delimited fields of a protobuf message (the last of each
    number); fixed-size fields skipped."""
    varints: dict[int, int] = {}
    blobs: dict[int, bytes] = {}
    i = 0
    while i < len(message):
        key, i = _varint(message, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            varints[number], i = _varint(message, i)
        elif wire == 2:
            size, i = _varint(message, i)
            blobs[number] = message[i:i + size]
            i += size
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(message):
            raise _Short
    return varints, blobs


@dataclass(frozen=True)
class Block:
    """One block as its header describes it."""

    offset: int           # where its length field starts
    end: int              # where its payload ends
    modules: int
    results: int
    command_line: bool    # the session block holding ncu's command line


def _block(source: Path, number: int, pos: int, header: bytes, total: int) -> Block:
    try:
        varints, blobs = _fields(header)
        session = _fields(blobs[_SESSION])[1] if _SESSION in blobs else {}
    except ValueError as exc:
        raise ExportParseError(f"{source}: block {number} at byte {pos} is not a report block ({exc}); "
                               f"{CUT_HINT}") from exc
    if _PAYLOAD not in varints:
        raise ExportParseError(f"{source}: block {number} at byte {pos} has no payload size; {CUT_HINT}")
    end = pos + 4 + len(header) + varints[_PAYLOAD]
    if end > total:
        raise ExportParseError(f"{source}: the report ends inside block {number} ({end - total} bytes of it "
                               f"missing), at byte {total}; {CUT_HINT}")
    return Block(pos, end, varints.get(_MODULES, 0), varints.get(_RESULTS, 0), _COMMAND_LINE in session)


def report_blocks(path: Path, source: Path) -> list[Block] | None:
    """The blocks of the report at `path` (messages name `source`), or None for a file of a layout
    not known here. ExportParseError where it ends inside its header or a block."""
    total = path.stat().st_size
    with path.open("rb") as f:
        start = f.read(8)
        if start[:4] != MAGIC or len(start) < 8:
            log.debug("%s: no NVR magic; framing not checked", source)
            return None
        (head,) = struct.unpack_from("<I", start, 4)
        try:
            version = _fields(f.read(head))[0].get(1) if 8 + head <= total else None
        except (_Short, ValueError):
            version = None
        if version is None:
            raise ExportParseError(f"{source}: the report ends inside its file header ({total} bytes); {CUT_HINT}")
        if version not in KNOWN_VERSIONS:
            log.debug("%s: report file version %s; framing not checked", source, version)
            return None
        pos, blocks = 8 + head, []
        while pos < total:
            where = "inside a block's length"
            if pos + 4 <= total:
                f.seek(pos)
                (size,) = struct.unpack("<I", f.read(4))
                where = "inside a block header"
                if pos + 4 + size <= total:
                    try:
                        blocks.append(_block(source, len(blocks), pos, f.read(size), total))
                        pos = blocks[-1].end
                        continue
                    except _Short:
                        pass
            raise ExportParseError(f"{source}: the report ends {where}, at byte {total}; {CUT_HINT}")
    return blocks


def check_report_frame(path: Path, source: Path) -> None:
    """ExportParseError (naming `source`) if the report at `path` is cut where its framing shows it:
    inside a block, right after a module, or before the session's command line; nothing if it looks
    whole (a cut right after a result cannot be seen) or is of a layout not known here."""
    blocks = report_blocks(path, source)
    if not blocks:
        return
    last = blocks[-1]
    if last.modules and not last.results:
        raise ExportParseError(
            f"{source}: the report ends after a kernel's module (block {len(blocks) - 1}), before the kernel's "
            f"result, at byte {last.end}; {CUT_HINT}")
    results = sum(b.results for b in blocks)
    if results and not any(b.command_line for b in blocks):
        raise ExportParseError(
            f"{source}: the report ends inside the session blocks ncu writes after the first kernel (no ncu "
            f"command line), at byte {last.end}; {CUT_HINT}")
    log.debug("%s: %d blocks, %d results, whole as far as its framing shows", source, len(blocks), results)
