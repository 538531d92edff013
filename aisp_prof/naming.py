"""Names every stage shares: run-folder files, NVTX paths, run ids, chapters, hardware keys,
precisions. One definition each, so the collector, the parsers and the database agree.
"""
from __future__ import annotations

import difflib
import hashlib
import re
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

# files of a run folder (profiles/<run-id>/)
RUN_JSON = "run.json"
CHECK_JSON = "check.json"        # the check, and the first timing process's samples
TIMING_JSON = "timing_p{process}.json"   # the samples of each further timing process
NCU_CSV = "ncu_raw.csv"
NCU_CSV_GZ = NCU_CSV + ".gz"     # the same, gzipped (shipped samples: a 2.9 MB CSV is 0.2 MB)
NCU_REP = "ncu.ncu-rep"          # gzipped to ncu.ncu-rep.gz once exported (about 10x smaller)
NSYS_SQLITE = "nsys.sqlite"
NSYS_REP = "nsys.nsys-rep"
NSYS_CHILD_JSON = "nsys_child.json"   # the report of the nsys capture (variants, iterations, warm-up)
NCU_CHILD_JSON = "ncu_child.json"     # the report of the child ncu profiled
GPU_RELEASED = ".gpu_released"        # the check process writes it when done with the GPU (collect.process.child --release)
COMPILE_CACHE_DIR = "compile_cache"   # Inductor's and Triton's caches while the children run (then removed)
GENERATED_DIR = "generated"           # what the compilers generated, kept: output code, TTGIR/PTX/SASS

# the timers a speedup can use, in the default order (analyze.timing.speedup says why), and how each is
# shown; gpu_events, latency and steady are the timer's three kinds (collect.timing.samplers), cuda_events
# the one CUDA-event timer of runs before them
SPEEDUP_TIMERS = ("gpu_events", "nsys_gpu_time", "cuda_events", "ncu_duration", "steady", "latency")
HOST_TIMERS = ("latency", "steady")          # the timers that include the host's work
TIMER_KINDS = {"gpu_events": "gpu", "latency": "latency", "steady": "steady"}   # timer -> its samples' kind
TIMER_LABELS = {"gpu_events": "GPU time, CUDA events", "nsys_gpu_time": "nsys GPU time", "cuda_events": "CUDA events",
                "ncu_duration": "ncu duration", "steady": "steady time per call", "latency": "latency per call"}
TIMER_SHORT = {"gpu_events": "GPU events", "nsys_gpu_time": "nsys GPU", "cuda_events": "CUDA events",   # in a column
               "ncu_duration": "ncu", "steady": "steady", "latency": "latency"}
GENERATED_INDEX = "generated/index.json"
AB_BASE, AB_CAND = "base:", "cand:"   # `bench ab`: a variant of the base code and of the candidate, in one process

NVTX_ROOT = "aisp"

SCALAR_PRECISIONS = ("fp64", "fp32", "fp16")
TENSOR_PRECISIONS = ("tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp8", "tensor_int8", "tensor_fp64")
SPARSE_SUFFIX = "_sparse"
# ncu reports these tensor peaks as 2:4-sparse rates; fp64 has no sparse path
SPARSE_REPORTED = frozenset({"tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp8", "tensor_int8"})
SPARSE_PRECISIONS = tuple(p + SPARSE_SUFFIX for p in TENSOR_PRECISIONS if p in SPARSE_REPORTED)
PRECISIONS = SCALAR_PRECISIONS + TENSOR_PRECISIONS + SPARSE_PRECISIONS


def nvtx_path(pair: str, variant: str) -> str:
    """The nested push/pop ranges a variant runs in: aisp > <pair> > <variant>."""
    return f"{NVTX_ROOT}/{pair}/{variant}"


def variant_of(nvtx_range: str, pair: str | None) -> str:
    """'aisp/<pair>/<variant>' -> '<variant>', also for ranges a library opened inside the
    variant's ('aisp/<pair>/<variant>/ncclAllReduce': NCCL's own); any other range is its own
    variant name."""
    parts = nvtx_range.split("/") if nvtx_range else []
    if len(parts) >= 3 and parts[0] == NVTX_ROOT and (pair is None or parts[1] == pair):
        return parts[2]
    return nvtx_range


def rank_path(path: Path, rank: int) -> Path:
    """A rank's own file of a multi-rank run: rank 0 keeps `path` (what a one-process run
    writes), rank r writes `<stem>.rank<r><suffix>` beside it (check.rank1.json, nsys.rank1.sqlite)."""
    return path if rank == 0 else path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def stored(path: Path) -> Path | None:
    """A run folder's file as it is there: `path`, or `path.gz` where it is kept gzipped (the
    shipped samples' `ncu_raw.csv.gz`, `nsys.sqlite.gz`, `check.json.gz`); None when neither is."""
    return next((p for p in (path, path.with_name(path.name + ".gz")) if p.exists()), None)


def new_run_id(pair_name: str) -> str:
    """'<UTC time>-<pair>-<4 hex>': sorts by time, says what ran, never collides in practice."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{pair_name}-{secrets.token_hex(2)}"


def utc_now() -> str:
    """The timestamp format of run.json and the database: ISO 8601, seconds, UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def chapter_key(text: str) -> str | None:
    """'ch9', 'CH09', 'ch009' -> 'ch09'; None when `text` is not a chapter."""
    m = re.fullmatch(r"ch0*(\d+)", text.strip().lower())
    return f"ch{int(m.group(1)):02d}" if m else None


def chapter_of_pair(pair: str | None) -> str | None:
    """'ch09.fused_l2norm' -> 'ch09'."""
    return chapter_key(pair.split(".", 1)[0]) if pair else None


def close_names(name: str, known: Iterable[str], cutoff: float = 0.5, chapters: bool = True) -> list[str]:
    """What a "did you mean" offers for a name not among `known`: the closest (at most 3, best first),
    with `chapters` the chapters of the pairs named among them (`ch99` -> ch09), a chapter typed with
    the letter O for a zero first (`ch1O` -> ch10)."""
    names = list(dict.fromkeys(known))
    chapters_of = sorted({c for n in names if (c := chapter_of_pair(n))} - set(names)) if chapters else []
    close = [c for c in difflib.get_close_matches(name, names + chapters_of, n=4, cutoff=cutoff) if c != name][:3]
    zero = chapter_key(re.sub("[oO]", "0", name))
    return [zero, *(c for c in close if c != zero)][:3] if zero in chapters_of + names and zero != name else close


def hardware_key(gpu_name: str | None, gpu_count: int = 1) -> str:
    """The key of per-GPU files (expectations_<key>.json, calibration/<key>.json):
    'NVIDIA H100 80GB HBM3' -> 'h100_80gb_hbm3'; 'NVIDIA H200' -> 'h200'; 2 GPUs -> '2x_h200';
    no name -> 'unknown'."""
    if not gpu_name:
        return "unknown"
    name = re.sub(r"^nvidia[\s_-]*", "", gpu_name.strip().lower())
    key = re.sub(r"[^a-z0-9]+", "_", name).strip("_") or "unknown_gpu"
    return f"{gpu_count}x_{key}" if gpu_count > 1 else key


def card_name(gpu_name: str | None, gpu_count: int = 1) -> str:
    """A card's short name for grouping and page names: 'NVIDIA H100 80GB HBM3' -> 'H100',
    'NVIDIA H200' -> 'H200', 2 GPUs -> '2x H200', no name -> 'unknown GPU'."""
    words = re.sub(r"^nvidia[\s_-]*", "", (gpu_name or "").strip(), flags=re.I).split()
    card = words[0] if words else "unknown GPU"
    return f"{gpu_count}x {card}" if gpu_count > 1 else card


MAX_SLUG = 100                     # file names stay far below the 255 bytes file systems allow


def file_slug(text: str) -> str:
    """A file-name-safe form of a pair, label or run id; a long one (a 5000-character label)
    is cut, with a hash of the whole so that two long names stay distinct."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "run"
    if len(slug) <= MAX_SLUG:
        return slug
    return f"{slug[: MAX_SLUG - 9].rstrip('-.')}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"

# a run's (and a recorded session's) `compile_cache` (collect.code.compile_cache.compile_cache_kind): each
# timing process compiled with empty Inductor and Triton caches (a recording); the first process's caches
# were the user's, kept between runs ($TORCHINDUCTOR_CACHE_DIR, bench run --compile-cache); the run's own
# for its first timing process and its profilers, each further timing process an empty one of its own (a
# gate since 6d84cc2); else the run's own, shared by all its processes (`run`, and gates before 6d84cc2)
FRESH_COMPILE_CACHE = "fresh per process"
KEPT_COMPILE_CACHE = "kept between runs"
FRESH_AFTER_FIRST = "fresh after the first"
SHARED_COMPILE_CACHE = "shared"
