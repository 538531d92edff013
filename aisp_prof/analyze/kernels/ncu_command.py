"""What a run's recorded ncu command line says about its numbers.

The roofline reads two things from `run.json`'s `commands.ncu`: the clock and cache control the
kernels were replayed under (two runs profiled differently are not comparable, and a flushed
cache makes DRAM bytes a cold start), and how many calls of each variant the ncu child made
(counters cover all of them, the pair's analytic FLOPs one call). Points, warnings and the
roofline's run summary all need them, so they live apart from each.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

NCU_DEFAULT_SETTINGS = {"clock_control": "base", "cache_control": "all"}


def _flag_value(cmd: Sequence[str], flag: str) -> str | None:
    for i, part in enumerate(cmd):
        if part == flag and i + 1 < len(cmd):
            return str(cmd[i + 1])
        if str(part).startswith(flag + "="):
            return str(part).split("=", 1)[1]
    return None


def ncu_settings(info: Mapping[str, Any]) -> dict[str, str] | None:
    """--clock-control / --cache-control of the run's ncu command (ncu's defaults if absent)."""
    cmd = (info.get("commands") or {}).get("ncu")
    if not cmd:
        return None
    out = dict(NCU_DEFAULT_SETTINGS)
    for flag, key in (("--clock-control", "clock_control"), ("--cache-control", "cache_control")):
        value = _flag_value(cmd, flag)
        if value is not None:
            out[key] = value
    return out


def ncu_iterations(info: Mapping[str, Any]) -> int:
    """Calls of each variant the ncu child made (aisp-prof uses 1)."""
    cmd = (info.get("commands") or {}).get("ncu") or []
    value = _flag_value(cmd, "--iterations")
    return int(value) if value and value.isdigit() and int(value) > 0 else 1
