"""aisp-prof as a library: the runs in a database as pandas DataFrames, rooflines and reports.

    import aisp_prof
    db = aisp_prof.open_db("profiles/aisp.db")        # default: $AISP_PROF_DB or profiles/aisp.db
    db.import_path("profiles/samples/20261126T011557Z-ch09.fused_l2norm-90df")
    db.summary("ch09.fused_l2norm")                     # one row per variant
    db.kernels("latest"), db.ranges("latest"), db.roofline_points("latest")
    run = db.open("latest")                             # read once: run.summary, .roofline, .verdict, .ranks

This is the only package that chains the stages: the store reads a run (one open of the
database), analysis computes from the RunData it is handed, render draws what it is given. A
RUN argument is a run id, a unique prefix, 'latest' or a pair name (its latest run); None or any
other type is an ArgumentError (exit 2), never silently the latest run, and one str where a
sequence is taken is one item (`aisp_prof.arguments`). Every CLI command is one call into this package.
"""
from __future__ import annotations

from ..analyze.kernels.table import KERNEL_FIELDS, KERNEL_FLOPS, KERNEL_RECORD_LAYOUT, kernel_records  # noqa: F401
from ..model.run_data import RunData  # noqa: F401
from ..pairs.declared import declared  # noqa: F401
from .database import RunDatabase, open_db, sample_runs  # noqa: F401
from .run import (NO_COUNTERS, SUMMARY_TABLES, Run, RunResult, roofline_input, roofline_of,  # noqa: F401
                  run_summary, summary_records, verdict_of)
