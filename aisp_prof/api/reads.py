"""How the API reads a stored run for what it is about to compute: a `Run` (summary, diff) and a
report page read a one-rank run's timeline as the store keeps it summed (issue 33), not row by row;
`aisp-prof code` and a report page read the generated code in the run's folder wherever that is now."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..errors import ExportParseError
from ..model.run_data import RunData
from ..naming import FRESH_COMPILE_CACHE, KEPT_COMPILE_CACHE
from ..pairs.declared import declared
from ..store import db as store_db
from ..store.identity import RunFolder, find_run_folder


def read_to_open(conn: store_db.Reader, run_id: str, tables: Sequence[str]) -> RunData:
    """`read_run` for a `Run`, except a one-rank run's timeline: its call spread instead (all that
    a Run reads of it, as the store keeps it), so a summary or diff of a 1M-kernel run reads a
    row per variant. A multi-rank run's rank report needs the whole timeline."""
    tables = store_db.child_tables(tables)         # a str is one table, not its letters; a typo is said
    if "timeline" not in tables or conn.count("ranks", run_id):
        return conn.read_run(run_id, False, tables)
    data = conn.read_run(run_id, False, [t for t in tables if t != "timeline"])
    data.call_spread = conn.call_spread(run_id)
    return data


def read_for_page(conn: store_db.Reader, run_id: str) -> tuple[RunData, Any]:
    """`read_run` for a report page, except a one-rank run's timeline: grouped by launch shape, its
    first calls and its call spread, in SQL (`PageTimeline`); a multi-rank run's page reads it whole."""
    from ..analyze.page.contents import PageTimeline

    if conn.count("ranks", run_id):
        return declared(conn.read_run(run_id)), None
    run = declared(conn.read_run(run_id, False, [t for t in store_db.TABLES if t != "timeline"]))
    mem = run.memory_ops
    first_mem = {}
    if not mem.empty and {"variant", "range_instance", "start_ns", "end_ns"} <= set(mem):
        ordered = mem.dropna(subset=["range_instance"]).sort_values(["start_ns", "end_ns"], kind="stable")
        first_mem = ordered.groupby("variant", sort=False)["range_instance"].first().to_dict()
    got = conn.page_timeline(run_id, first_mem)
    if got is None:
        run.timeline = conn.table("timeline", run_id)
        return run, None
    run.call_spread = conn.call_spread(run_id)
    return run, PageTimeline(got[0], got[1], got[2] == 0)


def world_sizes(conn: store_db.Reader) -> dict[str, int]:
    """Each stored run's rank count (run.json's world_size; 1 where it says none): a report names a
    2-rank run's card '2x H200'."""
    if "info_json" not in conn.columns("runs"):
        return {}
    rows = conn.query("SELECT run_id, json_extract(info_json, '$.world_size') AS world FROM runs")
    return {r["run_id"]: int(r["world"] or 1) for r in rows}


def read_generated(data: RunData, db: Path) -> tuple[RunFolder, dict[str, Any] | None]:
    """Where `data`'s run folder is now (`store.identity.find_run_folder`: the stored path may be
    relative or stale) and its generated-code index (None where it holds none or is not here)."""
    from ..parse.code.generated_code import read_index

    kept = data.info.get("generated")
    folder = find_run_folder(data.run_id, data.run.get("run_dir"), db,
                             kept.get("triton_kernels") if isinstance(kept, dict) else None)
    return folder, (read_index(folder.path) if folder.path is not None else None)


# compile caches a run compiles in but does not index into generated/ (run.json `compile_cache`)
_CACHES_NOT_KEPT = {
    FRESH_COMPILE_CACHE: "its processes each compiled in an empty cache of their own, removed after (a gate "
                         "recording's A/A draw): nothing was kept",
    KEPT_COMPILE_CACHE: "it compiled in the cache $TORCHINDUCTOR_CACHE_DIR or $TRITON_CACHE_DIR named, which "
                        "runs do not copy (unset them to keep a run's code)",
}


def no_generated_code(data: RunData, folder: RunFolder) -> ExportParseError:
    """Why a run has no generated code to show, in one line. A folder not here is the answer unless
    its run.json says nothing was kept (runs before that field: it cannot tell, so the folder is)."""
    kept = data.info.get("generated", True)
    if folder.missing and kept:
        return ExportParseError(folder.missing_message())
    if folder.stored is None:
        why = "it was imported from export files, not from its run folder (importing the folder keeps generated/)"
    elif data.info.get("compile_cache") in _CACHES_NOT_KEPT:
        why = _CACHES_NOT_KEPT[data.info["compile_cache"]]
    elif isinstance(kept, dict):
        why = (f"its folder {folder.path} has no generated/ index although its run.json records "
               f"{kept.get('triton_kernels')} Triton kernels: copy the folder again, generated/ included")
    else:
        why = "no variant compiled anything (torch.compile, Triton), or the run predates generated/"
    return ExportParseError(f"run {data.run_id} kept no generated code here: {why}")
