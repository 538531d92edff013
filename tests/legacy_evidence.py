"""Format-2 evidence (one CUDA-event timer, before issue 28) as a current-format file whose sessions
say what they are: kind "legacy". The gate's logic (margins, other code, verdicts) is the same
for any kind; the tests that record into a copy of such a fixture need it readable by `load`."""
from __future__ import annotations

from pathlib import Path

from aisp_prof.analyze.gate import expectations as exp


def current_format_copy(src: Path, dst: Path) -> Path:
    """`src` (format 2) written to `dst` in the current format, every session of kind legacy."""
    data = exp.read_any(src)
    for entry in data["pairs"].values():
        entry["sessions"] = [dict(s, kind="legacy") for s in entry["sessions"]]
    exp.save(dst, {**data, "format": exp.FORMAT})
    return dst
