"""Forked against fresh check and timing processes, on one GPU machine (issue 28; `collect/process/preload.py`):
per pair, variant and kind of time, the median of each arm's per-process medians, their ratio, and each arm's
spread between processes; then each arm's verdicts. Reads the two run databases `benchmarks/preload_ab.sh`
fills (`bench run` forked, `bench run --fresh-processes`, alternated on one lease).

    python benchmarks/preload_ab.py forked.db fresh.db [--json]

A forked/fresh ratio within both arms' spread says the fork does not move that time; one outside it (as
ch14.triton_persistent's steady time did: +13.5% forked, -9.2% fresh against its evidence) says it does.
A pair the gate judges by latency or steady time runs fresh processes in both arms (`bench.runner`:
`paused`): its rows are marked * and say nothing about the fork.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import pandas as pd

ARMS = ("forked", "fresh")


def process_medians(db: Path) -> pd.DataFrame:
    """One row per run, timing process, variant and kind: the median time in ns (reference kernels left out)."""
    with closing(sqlite3.connect(db)) as con:
        samples = pd.read_sql_query("SELECT s.run_id, r.pair, s.process, s.variant, s.kind, s.time_ns FROM samples s "
                                    "JOIN runs r USING (run_id) WHERE s.variant NOT LIKE 'ref:%'", con)
    return samples.groupby(["pair", "variant", "kind", "run_id", "process"], as_index=False)["time_ns"].median()


def verdicts(db: Path) -> pd.DataFrame:
    with closing(sqlite3.connect(db)) as con:
        return pd.read_sql_query("SELECT pair, variant, verdict FROM verdicts WHERE variant NOT LIKE 'ref:%'", con)


def compare(forked: Path, fresh: Path) -> pd.DataFrame:
    """Per pair, variant and kind: each arm's median of process medians (us), processes, spread (max/min of
    its process medians, -1, in %), and forked / fresh."""
    rows = []
    for arm, db in zip(ARMS, (forked, fresh)):
        per = process_medians(db).groupby(["pair", "variant", "kind"])["time_ns"]
        rows.append(pd.DataFrame({f"{arm}_us": per.median() / 1e3, f"{arm}_processes": per.size(),
                                  f"{arm}_spread_pct": (per.max() / per.min() - 1) * 100}))
    table = rows[0].join(rows[1], how="outer").reset_index()
    table["forked_over_fresh"] = table["forked_us"] / table["fresh_us"]
    table["both_fresh"] = table["kind"] != "gpu"       # host-timed pairs are never forked
    return table


def render(table: pd.DataFrame, counts: dict[str, dict[str, int]]) -> str:
    lines = [f"{'pair':<36} {'variant':<22} {'kind':<7} {'forked us':>10} {'fresh us':>10} {'f/f':>6} "
             f"{'spread % (n)':>20}"]      # (+ " *": 119 columns at most)
    for r in table.itertuples():
        spread = f"{r.forked_spread_pct:.1f} ({r.forked_processes:.0f}) / {r.fresh_spread_pct:.1f} ({r.fresh_processes:.0f})"
        lines.append(f"{r.pair[:36]:<36} {r.variant[:22]:<22} {r.kind:<7} {r.forked_us:>10.2f} {r.fresh_us:>10.2f} "
                     f"{r.forked_over_fresh:>6.3f} {spread:>20}" + (" *" if r.both_fresh else ""))
    if table["both_fresh"].any():
        lines.append("* judged by host-side time: fresh processes in both arms (never forked)")
    for arm in ARMS:
        lines.append(f"{arm} verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts[arm].items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("forked", type=Path)
    ap.add_argument("fresh", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    for db in (args.forked, args.fresh):
        if not db.is_file():
            print(f"preload_ab: cannot read {db}: no such file (benchmarks/preload_ab.sh writes it)", file=sys.stderr)
            return 2
    table = compare(args.forked, args.fresh)
    counts = {arm: verdicts(db)["verdict"].value_counts().to_dict() for arm, db in zip(ARMS, (args.forked, args.fresh))}
    if args.json:
        print(json.dumps({"rows": json.loads(table.to_json(orient="records")), "verdicts": counts}, indent=1))
    else:
        print(render(table, counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
