"""Which measured calibration fits a run: by hardware key, or, for an export imported without a
GPU name, by the SM count and memory size ncu recorded. A pure choice among calibrations the
store has already read (`store.calibrations`), so analysis never opens a file or a database.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from ..naming import hardware_key

SM_COUNT = "device__attribute_multiprocessor_count"
MEMORY_BYTES = "device__attribute_total_memory"


class DescribesGpu(Protocol):
    gpu_name: str | None
    device: Mapping[str, float]


def find_calibration(calibrations: Sequence[Mapping[str, Any]], key: str | None = None,
                     sm_count: int | None = None,
                     gpu_memory_bytes: int | None = None) -> tuple[dict[str, Any], str] | None:
    """(calibration, source) for a hardware key, or for a device signature when the key is
    unknown (only when exactly one calibration has that signature)."""
    if key and key != "unknown":
        for cal in calibrations:
            if cal.get("hardware_key") == key:
                return _split(cal)
        return None
    if sm_count is None or gpu_memory_bytes is None:
        return None
    matches = [c for c in calibrations if c.get("sm_count") == sm_count and c.get("gpu_memory_bytes") == gpu_memory_bytes]
    return _split(matches[0]) if len(matches) == 1 else None


def _split(cal: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    body = {k: v for k, v in cal.items() if k != "_source"}
    return body, str(cal.get("_source", ""))


def calibration_for_runs(calibrations: Sequence[Mapping[str, Any]],
                         runs: Sequence[DescribesGpu]) -> tuple[dict[str, Any], str] | None:
    """The calibration of the first run that names its GPU, else of a device signature."""
    named = next((r for r in runs if r.gpu_name), None)
    if named is not None:
        return find_calibration(calibrations, hardware_key(named.gpu_name))
    for r in runs:
        sm, mem = r.device.get(SM_COUNT), r.device.get(MEMORY_BYTES)
        if sm and mem:
            found = find_calibration(calibrations, None, int(sm), int(mem))
            if found:
                return found
    return None
