"""Profiling pairs (`aisp-prof run`) and the quick start, as one call each: which pairs run here,
each checked, profiled, stored and summarized (`RunDatabase.profile`); without a GPU the quick
start stores the shipped sample runs instead. The caller is told of each result as it comes."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NoGpuError

if TYPE_CHECKING:
    from ..bench.ab import AbOutcome
    from ..collect.process.runner import RunOptions
    from ..pairs import KernelPair
    from ..render.report import Report
    from .database import RunDatabase
    from .run import RunResult

QUICKSTART_REPORT = Path("reports") / "quickstart"
QUICKSTART_PAIR = "ch09.fused_l2norm"


@dataclass(frozen=True)
class RunRequest:
    """`aisp-prof run`'s options, as given."""

    variants: str | None = None
    sizes: str | None = None
    label: str | None = None
    profiles_dir: Path = Path("profiles")
    ncu: str | None = None
    nsys: str | None = None
    no_ncu: bool = False
    no_nsys: bool = False
    nsys_iterations: int = 5
    extra_metrics: tuple[str, ...] = ()
    timing_processes: int = 1
    nproc_per_node: int | None = None
    ncu_rank: int = 0
    nnodes: int = 1
    node_rank: int | None = None
    rdzv_endpoint: str | None = None
    launcher: str = "torchrun"

    def options(self, pair: KernelPair) -> RunOptions:
        """The collection options for one pair (its --sizes parsed against its own sizes)."""
        from ..collect.process.runner import RunOptions, TimingOptions
        from ..pairs import pair_sizes
        from ..parse.metrics.table import DEFAULT_GROUPS

        return RunOptions(
            pair=pair, profiles_dir=self.profiles_dir, sizes=pair_sizes(pair, self.sizes),
            variants=self.variants.split(",") if self.variants else [], ncu=self.ncu, nsys=self.nsys,
            label=self.label, with_ncu=not self.no_ncu, with_nsys=not self.no_nsys,
            nsys_iterations=self.nsys_iterations,
            timing=TimingOptions(processes=self.timing_processes, max_processes=self.timing_processes),
            nproc_per_node=self.nproc_per_node, ncu_rank=self.ncu_rank, nnodes=self.nnodes,
            node_rank=self.node_rank, rdzv_endpoint=self.rdzv_endpoint, launcher=self.launcher,
            metric_groups=DEFAULT_GROUPS + tuple(g for g in self.extra_metrics if g not in DEFAULT_GROUPS))


def profile_targets(db: RunDatabase, targets: Sequence[str], request: RunRequest,
                    progress: Callable[[str], None] = lambda m: None,
                    each: Callable[[RunResult], None] = lambda r: None) -> list[RunResult]:
    """Profile each selected pair. In a run of several pairs, one that cannot run on this machine
    (e.g. a Blackwell-only pair, or one that needs nvcc) is skipped with its reason; alone, it fails.
    First the CUDA libraries of the pairs that run here, where several are not yet built, are built
    in parallel (`collect.code.prebuild`), before anything is timed."""
    from ..collect.code.prebuild import prebuild
    from ..pairs import select
    from ..pairs.capabilities import detect_machine, runnable

    if request.node_rank:                 # a following node of a multi-node job: node 0 collects and stores
        return follow_node(request, progress)
    selected, machine = select(list(targets)), detect_machine()
    asked = request.variants.split(",") if request.variants else ()
    answers = {pair.name: runnable(pair, machine, asked) for pair in selected}
    prebuild([p for p in selected if answers[p.name].ok], progress,
             variants={p.name: asked for p in selected} if asked else None)
    results = []
    for i, pair in enumerate(selected, 1):
        progress(f"== {pair.name} ({i}/{len(selected)})")
        answer = answers[pair.name]
        if not answer.ok and len(selected) > 1 and answer.error is not NoGpuError:
            progress(f"   skipped: {answer.reason}")
            continue
        result = db.profile(request.options(pair), progress=lambda m: progress(f"   {m}"))
        results.append(result)
        each(result)
    return results


def quickstart(db: RunDatabase, profiles_dir: Path, progress: Callable[[str], None] = lambda m: None,
               each: Callable[[dict[str, Any]], None] = lambda r: None) -> Report:
    """The README's first command: on a GPU, profile QUICKSTART_PAIR; without one, store every
    sample set shipped with aisp-prof (chapters 9, 10 and 14 on an H100 and an H200, and the
    2-GPU runs). `each` is handed the summary (summary_result's dict) of each profiled run, or
    without a GPU of QUICKSTART_PAIR's sample (the others are one line each in the report's
    index); the HTML report goes to QUICKSTART_REPORT."""
    from ..pairs.capabilities import detect_machine, surely_no_gpu
    from ..store.ingest import every_sample_run_dir

    if not surely_no_gpu() and detect_machine().gpu:
        profile_targets(db, (QUICKSTART_PAIR,), RunRequest(label="quickstart", profiles_dir=profiles_dir), progress,
                        lambda r: each(r.summary_dict()))
        return db.report(targets=[QUICKSTART_PAIR], out=QUICKSTART_REPORT)
    samples = every_sample_run_dir()
    progress(f"no CUDA GPU here: reading {len(samples)} sample run(s) recorded on real GPUs")
    run_ids = [db.import_path(run_dir, skip_stored=True) for run_dir in samples]
    progress(_stored_line(db, run_ids))
    shown = next((r for r in run_ids if QUICKSTART_PAIR in r), run_ids[0])
    for run in db.open_runs([shown]):
        each(run.result())
    done: list[str] = []
    return db.report(runs=run_ids, out=QUICKSTART_REPORT,
                     progress=lambda title: done.append(title) or progress(f"report page {len(done)}/{len(run_ids)}: {title}"))


def _stored_line(db: RunDatabase, run_ids: Sequence[str]) -> str:
    """'stored: ch09 on H100 (12), ch09 on H200 (12), ...': runs by chapter and card (a 2-GPU run counts
    under its card; the report's index tells them apart)."""
    from collections import Counter

    from ..naming import card_name, chapter_of_pair

    rows = {r["run_id"]: r for r in db.run_list()}
    groups = Counter((chapter_of_pair(rows[r].get("pair")) or "other", card_name(rows[r].get("gpu_name"))) for r in run_ids)
    return "stored: " + ", ".join(f"{c} on {k} ({n})" for (c, k), n in sorted(groups.items()))


def bench_ab(targets: Sequence[str], base: str, options: dict[str, Any],
             progress: Callable[[str], None] = lambda m: None) -> list[AbOutcome]:
    """`bench ab`: each selected pair's candidate (working tree or $AISP_KERNELS) timed side by side
    with its version in `base` (a kernels folder or a git revision), interleaved in the same
    processes, each variant judged by the ratio cand/base (`bench.ab`; `options`: AbOptions' fields).
    Of several pairs, one that cannot run here (or a torchrun job) is skipped with its reason; alone, it fails."""
    from ..bench.ab import AbOptions, ab_one
    from ..pairs import select
    from ..pairs.capabilities import detect_machine, runnable

    selected, machine, opts = select(list(targets)), detect_machine(), AbOptions(**options)
    out = []
    for pair in selected:
        answer = runnable(pair, machine)
        if len(selected) > 1 and (pair.distributed or (not answer.ok and answer.error is not NoGpuError)):
            progress(f"{pair.name}: skipped: {answer.reason or 'a torchrun job; bench ab times one process'}")
            continue
        out.append(ab_one(pair, base, opts, progress, machine))
    return out


def follow_node(request: RunRequest, progress: Callable[[str], None] = lambda m: None) -> list[RunResult]:
    """`run --node-rank K` (K > 0): this node's agent for each step node 0 posts (collect.ranks.follow),
    until node 0's run is done; nothing stored here (node 0 stores the run). Returns no results."""
    from ..collect.process.agents import run_agents
    from ..collect.process.steps import child_env
    from ..collect.ranks.follow import follow
    from ..collect.ranks.launch import Launch
    from ..errors import ArgumentError

    launch = Launch(request.nproc_per_node or 1, request.nnodes, request.node_rank, request.rdzv_endpoint,
                    request.launcher).check()          # --node-rank 3 --nnodes 2: said first
    if not request.nproc_per_node:
        raise ArgumentError("--node-rank needs --nproc-per-node: the ranks this node starts")
    progress(f"node {launch.node_rank} of {launch.nnodes}: following node 0's steps at {launch.rdzv_endpoint}")
    steps = follow(launch, request.profiles_dir, child_env(), run_agents, progress)
    progress(f"node {launch.node_rank}: node 0's run is done ({steps} steps); node 0 stored it")
    return []
