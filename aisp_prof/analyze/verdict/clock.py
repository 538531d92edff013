"""Which clock a run's ratios were measured at.

A heavy kernel timed back to back holds the H200 at its 700 W power cap, and NVML's software power cap
then holds the SM clock down: `aisp-prof run` of ch10.warp_specialization timed every variant at a median
1500 of 1980 MHz (~690 W), where the gate's recordings, sampled with pauses, ran at 1845 MHz (~565 W).
Kernels answer a lower clock unevenly (a compute-bound GEMM slows with it, a memory- or latency-bound
baseline does not), so a ratio measured there can differ from one at full clock by more than any noise
(ch09.cublaslt_gemm: 2.52x at 1710 MHz against 2.81x recorded at 1980 MHz). Nothing is wrong with such a
run; its ratios are of another clock, and `low_clock` says so beside them (`bench agree` names the same
cause for a difference from the gate, `analyze.gate.agree.clock_moved`).
"""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from ..rule_input import Finding, RuleInput

LOW_CLOCK_SHARE = 0.9            # a median SM clock under 90% of the card's maximum is another clock
SW_POWER_CAP = 0x4               # NVML clock event reason: the software power cap


def positive_number(value: Any) -> float | None:
    """A positive number from run.json's text or number fields ('1980', 700.0), else None."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if x > 0 else None


def sm_clock_max_mhz(info: Mapping[str, Any] | None) -> float | None:
    """The card's maximum SM clock a run recorded: run.json's `gpu`, else the check's `sensor`."""
    return positive_number(((info or {}).get("gpu") or {}).get("sm_clock_max_mhz")) or \
        positive_number(((info or {}).get("sensor") or {}).get("sm_clock_max_mhz"))


def low_clock(inp: RuleInput) -> list[Finding]:
    """A warning for the run when its timed calls ran at a median SM clock under LOW_CLOCK_SHARE of the
    card's maximum (run.json `gpu.sm_clock_max_mhz`), with the power and NVML's reason where sampled."""
    samples, gpu = inp.samples, inp.info.get("gpu") or {}
    top = sm_clock_max_mhz(inp.info)
    if top is None or samples is None or samples.empty or "sm_clock_mhz" not in samples:
        return []
    timed = samples[~samples["variant"].astype(str).str.startswith("ref:")]
    clock = pd.to_numeric(timed["sm_clock_mhz"], errors="coerce").dropna()
    if clock.empty or clock.median() >= LOW_CLOCK_SHARE * top:
        return []
    why = ""
    power, limit = _median(timed, "power_w"), positive_number(gpu.get("power_limit_w"))
    if power is not None:
        why = f"; power {power:.0f} W" + (f" of its {limit:.0f} W limit" if limit else "")
    reasons = pd.to_numeric(timed["clock_event_reasons"], errors="coerce").dropna() \
        if "clock_event_reasons" in timed else pd.Series(dtype=float)
    if not reasons.empty and ((reasons.astype("int64") & SW_POWER_CAP) != 0).mean() >= 0.5:
        why += ", the software power cap holding the clock"
    return [Finding("low_clock", "warning",
                    f"the timed calls ran at a median SM clock of {clock.median():.0f} MHz, "
                    f"{clock.median() / top:.0%} of the card's {top:.0f} MHz{why}: kernels answer a lower clock "
                    "unevenly (a compute-bound one slows with it, a memory-bound one does not), so these ratios "
                    "can differ from ones at full clock (`aisp-prof bench agree` sets them beside the gate's)")]


def _median(samples: pd.DataFrame, column: str) -> float | None:
    if column not in samples:
        return None
    values = pd.to_numeric(samples[column], errors="coerce").dropna()
    return float(values.median()) if not values.empty else None
