"""aisp-prof: did my GPU optimization work, and why? (collect -> parse -> store -> analyze -> render)

The library face is `aisp_prof.api`; its main names are available here:

    import aisp_prof
    db = aisp_prof.open_db()            # $AISP_PROF_DB or profiles/aisp.db
    db.summary("ch09.fused_l2norm")     # pandas DataFrames: runs, kernels, ranges, summary, roofline_points

They load on first use, so `import aisp_prof` (and every `aisp-prof` command) stays cheap.
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["open_db", "sample_runs", "RunDatabase", "RunResult", "api"]


def __getattr__(name: str) -> Any:
    if name in ("open_db", "sample_runs", "RunDatabase", "RunResult"):
        from . import api

        return getattr(api, name)
    if name == "api":
        import importlib

        return importlib.import_module(".api", __name__)
    raise AttributeError(f"module 'aisp_prof' has no attribute {name!r}")
