"""Shrink run folders the way the shipped samples are shrunk: gzip the big files aisp-prof reads
gzipped, and check that the folder still reads the same.

    python dev/shrink_samples.py profiles/samples_h100_ch10/            # every run folder in it
    python dev/shrink_samples.py profiles/20261127T...-ch10.x-1234/     # or run folders themselves
    python dev/shrink_samples.py --dry-run profiles/samples*/           # say what would shrink

Gzipped in place (X -> X.gz, the plain file removed): the nsys SQLite exports (`nsys.sqlite`,
`nsys.rank<r>.sqlite`, ~6x smaller), ncu's CSV (`ncu_raw.csv`, ~7x), the check's report
(`check.json`, `check.rank<r>.json`, ~18x), an ncu report (`ncu.ncu-rep`), the index of generated
code (`generated/index.json`, ~10x) and the logs (`*.log`: people read them, with `zcat`). run.json,
the small child reports and the rest of generated/ stay plain. Each folder is loaded before and after
(`aisp_prof.store.ingest.load_run_dir`, `parse.code.generated_code.read_index`); if anything differs, the
plain files are put back and the command exits 1. The gzip streams carry no name or time, so
shrinking the same file twice gives the same bytes.
"""
from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from aisp_prof.naming import GENERATED_INDEX, RUN_JSON
from aisp_prof.parse.code.generated_code import read_index
from aisp_prof.store.ingest import load_run_dir

GZIPPED = re.compile(r"nsys(\.rank\d+)?\.sqlite|ncu_raw\.csv|check(\.rank\d+)?\.json|ncu\.ncu-rep|[\w.]+\.log")
TABLES = ("kernels", "timeline", "memory_ops", "ranges", "range_levels", "graph_launches", "checks", "timings",
          "samples", "compiles", "ranks")


def run_folders(paths: list[Path]) -> list[Path]:
    """The run folders named, or found one level under a folder of them (profiles/samples*/)."""
    out = []
    for p in paths:
        out += [p] if (p / RUN_JSON).is_file() else sorted(q for q in p.iterdir() if (q / RUN_JSON).is_file())
    return out


def to_shrink(folder: Path) -> list[Path]:
    found = [p for p in folder.iterdir() if p.is_file() and GZIPPED.fullmatch(p.name)]
    return sorted(found + [p for p in [folder / GENERATED_INDEX] if p.is_file()])


def gzip_in_place(path: Path) -> Path:
    """path -> path.gz (written beside, then renamed: never half a file under the final name)."""
    target, partial = Path(f"{path}.gz"), Path(f"{path}.gz.partial")
    with path.open("rb") as src, partial.open("wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        raw.flush()
        os.fsync(raw.fileno())
    partial.replace(target)
    path.unlink()
    return target


def gunzip_in_place(gz: Path) -> None:
    plain = gz.with_name(gz.name[: -len(".gz")])
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    gz.unlink()


def differences(before, after) -> list[str]:
    """The tables (and raw ncu metrics) of two loads of one folder that differ."""
    bad = []
    for name in TABLES:
        a, b = getattr(before, name), getattr(after, name)
        if name == "ranks":          # each rank's export path names the file, plain or gzipped
            a, b = a.drop(columns=["path"], errors="ignore"), b.drop(columns=["path"], errors="ignore")
        try:
            pd.testing.assert_frame_equal(a, b)
        except AssertionError:
            bad.append(name)
    ma, mb = before.launch_metrics, after.launch_metrics
    if ma.metrics != mb.metrics or not np.array_equal(ma.values, mb.values, equal_nan=True):
        bad.append("launch_metrics")
    return bad


def shrink(folder: Path, verify: bool = True) -> tuple[int, int]:
    """Gzip `folder`'s big files; (bytes before, bytes after) of the files it gzipped."""
    files = to_shrink(folder)
    if not files:
        return 0, 0
    before = (load_run_dir(folder), read_index(folder)) if verify else None
    size_before = sum(p.stat().st_size for p in files)
    done = [gzip_in_place(p) for p in files]
    if verify:
        bad = differences(before[0], load_run_dir(folder))
        bad += [] if read_index(folder) == before[1] else [GENERATED_INDEX]
        if bad:
            for gz in done:
                gunzip_in_place(gz)
            raise SystemExit(f"{folder}: {', '.join(bad)} read differently once gzipped; the plain files are back")
    return size_before, sum(p.stat().st_size for p in done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="run folders, or folders of run folders")
    parser.add_argument("--dry-run", action="store_true", help="list what would be gzipped, change nothing")
    parser.add_argument("--no-verify", action="store_true", help="skip loading each folder before and after")
    args = parser.parse_args(argv)
    total = [0, 0]
    for folder in run_folders(args.paths):
        if args.dry_run:
            for p in to_shrink(folder):
                print(f"{p}  {p.stat().st_size / 1e6:.2f} MB")
            continue
        a, b = shrink(folder, verify=not args.no_verify)
        total[0] += a
        total[1] += b
        if a:
            print(f"{folder}: {a / 1e6:.2f} MB -> {b / 1e6:.2f} MB", flush=True)
    if not args.dry_run:
        print(f"total: {total[0] / 1e6:.2f} MB -> {total[1] / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
