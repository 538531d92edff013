"""What the GPU was doing while a sample was timed: SM and memory clock, power, temperature, and
why the clocks were held down (power cap, thermal), read through NVML after every sample.

A compute-bound kernel's time follows the SM clock, and the clock follows power and temperature:
cuBLAS ran 358 us per call at ~1980 MHz and 410 us at ~1700 MHz on the same H200 minutes later
(notes in shared/GPU_MACHINE.md). Recording the machine beside each sample is what lets the
gate say "the clock moved" instead of "the code regressed". NVML comes from `nvidia-ml-py`
(module `pynvml`); without it, or without a driver, every reading is None and says so.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

# NVML clocks-event reason bits worth naming (nvml.h, nvmlClocksEventReason*)
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
           0x100: "display_clock_setting"}
FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "clock_event_reasons")


def reason_names(bits: int | None) -> list[str]:
    """0x4 -> ['sw_power_cap']: the named reasons in an NVML clocks-event bitmask."""
    if not bits:
        return []
    return [name for bit, name in REASONS.items() if bits & bit]


@dataclass
class GpuSensor:
    """One GPU's NVML handle (or none). `read()` is cheap (tens of microseconds)."""

    handle: Any = None
    nvml: Any = None
    error: str = ""

    @property
    def available(self) -> bool:
        return self.handle is not None

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self.nvml, fn)(self.handle, *args)
        except Exception:  # noqa: BLE001 - a counter this GPU or driver lacks reads as None
            return None

    def read(self) -> dict[str, Any]:
        """The current clocks (MHz), power (W), temperature (C) and clock-event reason bits."""
        if not self.available:
            return dict.fromkeys(FIELDS)
        n = self.nvml
        power_mw = self._call("nvmlDeviceGetPowerUsage")
        return {"sm_clock_mhz": self._call("nvmlDeviceGetClockInfo", n.NVML_CLOCK_SM),
                "mem_clock_mhz": self._call("nvmlDeviceGetClockInfo", n.NVML_CLOCK_MEM),
                "power_w": power_mw / 1000.0 if power_mw is not None else None,
                "temperature_c": self._call("nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU),
                "clock_event_reasons": self._call("nvmlDeviceGetCurrentClocksEventReasons")
                if hasattr(n, "nvmlDeviceGetCurrentClocksEventReasons")
                else self._call("nvmlDeviceGetCurrentClocksThrottleReasons")}

    def limits(self) -> dict[str, Any]:
        """The clocks a sample is judged against: the SM clock's maximum and default, the power limit."""
        if not self.available:
            return {"source": None, "error": self.error}
        n = self.nvml
        limit_mw = self._call("nvmlDeviceGetEnforcedPowerLimit")
        return {"source": "nvml", "sm_clock_max_mhz": self._call("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_SM),
                "sm_clock_default_mhz": self._call("nvmlDeviceGetDefaultApplicationsClock", n.NVML_CLOCK_SM),
                "mem_clock_max_mhz": self._call("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_MEM),
                "power_limit_w": limit_mw / 1000.0 if limit_mw is not None else None}


def open_sensor(index: int = 0) -> GpuSensor:
    """NVML's view of GPU `index`, or a sensor that reads None (and says why in `error`)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return GpuSensor(pynvml.nvmlDeviceGetHandleByIndex(index), pynvml)
    except Exception as exc:  # noqa: BLE001 - no package, no driver, no GPU: measured without it
        log.info("no NVML readings: %s", exc)
        return GpuSensor(error=f"{type(exc).__name__}: {exc}")
