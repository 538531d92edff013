"""aisp-prof: did my GPU optimization work, and why? (collect -> parse -> store -> analyze -> render)

The library face is `aisp_prof.api`; its main names are available here:

    import aisp_prof
    db = aisp_prof.open_db()            # $AISP_PROF_DB or profiles/aisp.db
    db.summary("ch09.fused_l2norm")     # pandas DataFrames: runs, kernels, ranges, summary, roofline_points

They load on first use, so `import aisp_prof` (and every `aisp-prof` command) stays cheap.

Data moves one way. The stages, lowest first; a module imports only its own folder and stages
below it, never one above, and no import (at module level, under TYPE_CHECKING or inside a
function) closes a circle (tests/test_house.py keeps both, from STAGES):

    0. shared   errors, units, naming, paths, stats, export_rows, sqlite_frames, tools (finding
                ncu/nsys/nvcc/CUTLASS), model/ (RunData, LaunchMetrics: the records every stage holds), values
                (numpy/NaN to plain Python, a number or None, a column's sum or None), arguments (what a
                caller hands the library, checked where it comes in)
    1. pairs    what a pair declares and whether it can run here
    2. parse    profiler exports (ncu, nsys, PTX/SASS) -> tidy frames
    3. collect  the GPU side: profiling children, run folders, `nsys export`
    4. store    the database: reads and writes RunData; runs no tool
    5. analyze  pure functions of RunData (roofline, verdict, ranks, report pages, the gate's rules)
    6. render   tables, charts, the HTML report: draws what analysis computed
    7. bench, calibrate   runners that chain collect, store and analyze for one purpose
    8. api      the library face: every command is one call into it
    9. aisp_prof itself (its names load `api` on first use), then cli (click commands), then __main__
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
STAGES = (("errors", "units", "naming", "paths", "stats", "export_rows", "sqlite_frames", "tools", "model", "values",
           "arguments"),
          ("pairs",), ("parse",), ("collect",), ("store",), ("analyze",), ("render",), ("bench", "calibrate"),
          ("api",), ("",), ("cli",), ("__main__",))
__all__ = ["open_db", "sample_runs", "RunDatabase", "RunResult", "api"]


def __getattr__(name: str) -> Any:
    if name in ("open_db", "sample_runs", "RunDatabase", "RunResult"):
        from . import api

        return getattr(api, name)
    if name == "api":
        import importlib

        return importlib.import_module(".api", __name__)
    raise AttributeError(f"module 'aisp_prof' has no attribute {name!r}")
