"""Parse Nsight Compute `.ncu-rep` reports (or gzipped `.ncu-rep.gz`) with NVIDIA's `ncu_report`
Python module into the same `NcuParse` frames as the CSV parser.

A report keeps every digit ncu measured, where both CSV forms round (see `csv_page`), and needs
no `ncu --import` step, so it is the better input when the module is installed
(`pip install ncu-report`). `ncu_report` is imported inside the functions: the package is large,
native, and optional; nothing else in parse/ needs it.

Checked against a real report (H200, ncu 2025.3.1, read with ncu_report 2026.3.1): values come in
base units already (ns, byte, hz), and every metric, unit and NVTX range equals the CSV export of
the same report. Two differences remain: `process_id` is not in a report (NA here), and kernel
names keep their namespaces and template casts (`void at::native::vectorized_elementwise_kernel
<(int)4, ...`) where ncu's CSV strips them (`void vectorized_elementwise_kernel<4, ...`), so do not
join a report and a CSV on `kernel`.
"""
from __future__ import annotations

import gzip
import logging
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from aisp_prof.errors import ExportParseError
from aisp_prof.model.launch_metrics import LaunchMetrics
from aisp_prof.parse.ncu.csv_page import NcuParse, build_parse, nvtx_columns
from aisp_prof.parse.ncu.rep_frame import check_report_frame
from aisp_prof.parse.metrics.units import base_unit, scale_value

log = logging.getLogger(__name__)

_INSTALL_HINT = (
    "install it with `pip install ncu-report`, or export CSV with "
    "`ncu --import X.ncu-rep --csv --page raw --print-units base`"
)

# identity columns that ncu's CSV takes from these metrics of the launch
_ID_METRICS = {"context": "launch__context_id", "stream": "launch__stream_id",
               "device": "launch__device_id"}


@lru_cache(maxsize=1)
def ncu_report_available() -> bool:
    """Whether `ncu_report` imports here (its native library loads)."""
    try:
        import ncu_report  # noqa: F401
    except Exception as exc:  # ImportError, or OSError from the native library
        log.debug("ncu_report not usable: %s", exc)
        return False
    return True


def _value(action: Any, name: str) -> Any:
    metric = action.metric_by_name(name)
    return None if metric is None else metric.value()


def _dim(action: Any, prefix: str) -> str:
    """"(x, y, z)" as ncu's CSV writes Block Size / Grid Size, from launch__<prefix>_x/y/z."""
    parts = [_value(action, f"{prefix}_{axis}") for axis in "xyz"]
    return "" if None in parts else "({}, {}, {})".format(*(int(p) for p in parts))


def _nvtx_stack(action: Any) -> list[tuple[str, str]]:
    """(domain, name) per pushed range, domain by domain, outermost first within each. Every
    domain the process created is listed, most with no range open. (Whether ncu's CSV orders
    ranges open in two domains at once the same way is not verified.)"""
    state = action.nvtx_state()
    if state is None:
        return []
    stack = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        stack.extend((domain.name(), name) for name in domain.push_pop_ranges())
    return stack


def _identity(action: Any, launch_id: int) -> dict:
    major = _value(action, "device__attribute_compute_capability_major")
    minor = _value(action, "device__attribute_compute_capability_minor")
    ident = {
        "launch_id": launch_id,
        "process_id": None,  # not in the report's metrics
        "kernel": action.name(action.NameBase_DEMANGLED),
        "block_dim": _dim(action, "launch__block_dim"),
        "grid_dim": _dim(action, "launch__grid_dim"),
        "cc": "" if major is None or minor is None else f"{int(major)}.{int(minor)}",
    }
    for key, metric in _ID_METRICS.items():
        value = _value(action, metric)
        ident[key] = int(value) if isinstance(value, (int, float)) else None
    ident.update(nvtx_columns(_nvtx_stack(action)))
    return ident


def _load(path: Path, source: Path) -> NcuParse:
    check_report_frame(path, source)          # ncu_report reads a cut report without a word
    try:
        import ncu_report
    except (ImportError, OSError) as exc:  # OSError: its native library does not load
        raise ExportParseError(
            f"{source}: reading .ncu-rep needs the `ncu_report` module ({exc}); {_INSTALL_HINT}"
        ) from exc
    try:
        context = ncu_report.load_report(str(path))
    except Exception as exc:
        raise ExportParseError(f"{source}: ncu_report cannot load it ({exc})") from exc
    identities: list[dict] = []
    records: list[tuple[int, str, str, float]] = []
    present: set[str] = set()
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            launch_id = len(identities)  # ncu's ID: results numbered in report order
            identities.append(_identity(action, launch_id))
            for name in action.metric_names():
                metric = action.metric_by_name(name)
                value = metric.value()
                present.add(name)
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue  # strings ("NVIDIA H200") and missing values
                unit, exp = base_unit(metric.unit())
                records.append((launch_id, name, unit, scale_value(value, exp)))
    if not identities:
        raise ExportParseError(
            f"{source}: no kernels in the report (not an ncu report, or nothing was profiled)"
        )
    log.debug("%s: %d launches, %d metric values", source, len(identities), len(records))
    return build_parse(source, identities, LaunchMetrics.from_records(records), present)


def parse_ncu_rep(path: str | Path) -> NcuParse:
    """Parse a `.ncu-rep` or `.ncu-rep.gz` report into launches and long-form metrics."""
    path = Path(path)
    if not path.is_file():
        raise ExportParseError(f"{path}: no such report file")
    if not path.name.endswith(".gz"):
        return _load(path, path)
    with tempfile.TemporaryDirectory(prefix="aisp_ncu_rep_") as tmp:
        plain = Path(tmp) / path.name[: -len(".gz")]
        try:
            with gzip.open(path, "rb") as src, plain.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        except (OSError, EOFError) as exc:  # BadGzipFile is an OSError
            raise ExportParseError(
                f"{path}: not a complete gzip file ({exc}); copy the report again"
            ) from exc
        return _load(plain, path)
