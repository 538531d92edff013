"""`aisp-prof bench run`: the regression gate, pair by pair.

Each pair goes through `aisp-prof run`'s pipeline (check first; a failed check is stored and
stops the pair), then its variants and two reference kernels are timed side by side in fresh
processes (`collect.timing.timer`, interleaved, clocks beside every sample), at least `processes` of
them (default one), a second to confirm any FASTER or SLOWER, and more while a verdict is still
AMBIGUOUS (up to `max_processes`). The verdicts
(`analyze.gate.verdict`, and `analyze.gate.rules` for when to time another process and what fails)
are stored with the run, so `history` and reports read them back; with
`--update-expectations` the run's samples become a new session of the pair's recorded evidence,
unless its check failed or its clocks were throttled (then only with `force`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..analyze.timing.speedup import headline_kind
from ..collect.process.preload import paused
from ..collect.process.runner import RunOptions, TimingOptions
from ..errors import AispError, CorrectnessError, NoGpuError, NotRecordedError, RegressionError
from ..naming import SHARED_COMPILE_CACHE, hardware_key, utc_now
from ..pairs import KernelPair
from ..pairs import capabilities
from ..pairs.capabilities import Machine, runnable
from ..pairs.roles import REFERENCE
from ..pairs.source import source_mismatch
from ..parse.metrics.table import DEFAULT_GROUPS
from ..paths import data_root, kernels_root
from ..analyze.gate import expectations as exp
from ..analyze.gate.rules import (PAIR_BUDGET_S, Traits, failing, gate_kind, gate_verdicts, refusal, undecided,
                                   verdict_frame)
from ..analyze.gate.verdict import AMBIGUOUS, SAME, VariantVerdict

# --profile level -> (ncu, nsys, extra ncu metric groups)
PROFILE_LEVELS: dict[str, tuple[bool, bool, tuple[str, ...]]] = {
    "none": (False, False, ()),
    "minimal": (False, True, ()),
    "roofline": (True, False, ()),
    "full": (True, True, ("sol_breakdown", "stall_sampled")),
}


@dataclass(frozen=True)
class BenchOptions:
    """How `bench run` measures each pair, and against what."""

    profile: str = "none"
    repeats: int = 10                  # interleaved rounds per process, at least
    budget_s: float = 2.0              # sampling time per process
    floor_rounds: int = 40             # ... or on to this many rounds where it runs out first (SamplingPlan)
    processes: int = 1                 # timing processes per pair, at least (`undecided` asks for more)
    max_processes: int = 5             # ... and at most: a second confirms a change, more while AMBIGUOUS
    pair_budget_s: float | None = PAIR_BUDGET_S   # ... and while another fits in the pair's time (None: no budget)
    record_processes: int = 4          # processes of a recording session (--update-expectations)
    update_expectations: bool = False
    force: bool = False                # record even a throttled session (or one of other code)
    strict: bool = False               # AMBIGUOUS fails the gate too (CI that must decide)
    profiles_dir: Path = Path("profiles")
    expectations: Path | None = None   # default: kernels/chNN/expectations_<hardware key>.json
    preload: bool = True               # fork the check and timing processes of a GPU-timed pair from one
                                       # that imported torch (collect.process.preload); False: all fresh
    nproc_per_node: int | None = None  # ranks of a multi-rank pair (default: its world_size); its evidence
                                       # is keyed by the rank count too: expectations_<W>x_<gpu>.json
    compile_cache: Path | None = None  # Inductor's and Triton's caches kept here between gates
                                       # (collect.code.compile_cache.kept_compile_cache); None: each run its own
    fresh_binaries: bool = False       # compile every Triton binary anew; False: reuse those kept in the store
                                       # (collect.code.binary_store): the choices are made anew either way

    def timing(self, more: Callable[..., bool] | None, kind: str = "gpu") -> TimingOptions:
        """Only the kind of time the gate judges (`gate_kind`): the others would triple the cost. A
        recording's processes compile anew each (`fresh_compile_cache`), so its margin holds the
        compiler's choices as a fresh machine draws them. So do a gate's processes after the first
        (`fresh_further_caches`): one that confirms a change, or chases an AMBIGUOUS verdict, must be a
        new draw, not the first process's compile again. On an H200 lease (2026-11-29, no code change)
        ch14.regional_triton's max-autotuned baseline read -8.9% in its first process, and the second,
        sharing the first's compile cache and so its choices, confirmed it: FASTER, margin 7.4%; that
        lease's other two gates drew -7.3% and -1.5%. The first process keeps the run's own cache, which
        the run's profilers then share (they profile what it timed); with `--compile-cache` the first finds
        its compiles in the kept cache, and the further ones still draw anew."""
        count = self.record_processes if self.update_expectations else self.processes
        top = count if self.update_expectations else max(count, self.max_processes)
        return TimingOptions(min_rounds=self.repeats, budget_s=self.budget_s, floor_rounds=self.floor_rounds,
                             processes=count, max_processes=top,
                             references=True, more=None if self.update_expectations else more, kinds=(kind,),
                             fresh_compile_cache=self.update_expectations,
                             fresh_further_caches=not self.update_expectations)

    def run_options(self, pair: KernelPair, more: Callable[..., bool] | None) -> RunOptions:
        with_ncu, with_nsys, extra = PROFILE_LEVELS[self.profile]
        return RunOptions(pair=pair, profiles_dir=self.profiles_dir, label=f"bench:{self.profile}",
                          with_ncu=with_ncu, with_nsys=with_nsys, timing=self.timing(more, gate_kind(pair)),
                          metric_groups=DEFAULT_GROUPS + extra,
                          nproc_per_node=self.nproc_per_node if pair.distributed else None)

    def world_size(self, pair: KernelPair) -> int:
        """The ranks `pair` runs at in this bench (1 for a one-process pair)."""
        return (self.nproc_per_node or pair.world_size) if pair.distributed else 1


@dataclass
class PairOutcome:
    pair: str
    run_id: str | None
    status: str                       # ok, failed_check, skipped, error; "not run" (bench.gate: cut off)
    message: str = ""
    verdicts: list[VariantVerdict] = field(default_factory=list)
    recorded: str | None = None       # the expectations file a session was added to
    strict: bool = False              # AMBIGUOUS counts as failing
    hardware_key: str | None = None   # the evidence's key ('4x_h200' for a pair at 4 ranks)
    bus_bandwidth: list[dict[str, Any]] = field(default_factory=list)   # per (variant, op) of a multi-rank run

    @property
    def failing(self) -> list[VariantVerdict]:
        return failing(self.verdicts, self.strict)

    @property
    def fails(self) -> bool:
        return self.status == "error" or bool(self.failing)

    def line(self) -> str:
        """One line for a progress log: the status, then each variant's verdict (or why not)."""
        def said(v: VariantVerdict) -> str:
            moved = v.library and v.verdict != SAME
            return f"{v.variant} {v.verdict}{_change_text(v)}" + (" (a library, as machines move)" if moved else "")
        verdicts = ", ".join(said(v) for v in self.verdicts if not v.is_reference)
        return f"{self.pair}: {self.status}" + (f": {verdicts}" if verdicts else "") + \
            (f" ({self.message[:160]})" if self.message and self.status != "ok" else "")

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair, "run_id": self.run_id, "status": self.status, "message": self.message,
                "fails": self.fails, "recorded": self.recorded, "hardware_key": self.hardware_key,
                "verdicts": [v.to_dict() for v in self.verdicts], "bus_bandwidth": self.bus_bandwidth}


def machine_references(pair: KernelPair, entry: Any, kind: str) -> tuple[str, ...]:
    """The pair's declared reference variants (a library: cuBLAS, torch's softmax, eager PyTorch) that the
    gate may read as machine references (analyze.gate.verdict.judge_one): for a GPU time, and only where
    every recorded session measured the pair's module as it is now, so that a change of its code (its
    inputs, its wrappers) cannot excuse itself by the library it also slowed; else none."""
    from ..pairs.source import source_digest

    if kind != "gpu" or not pair.source or not (entry or {}).get("sessions"):
        return ()
    now = source_digest(Path(pair.source))
    if not (now.get("sha256") or now.get("code_sha256")) or \
            exp.other_code(entry, now.get("sha256"), now.get("code_sha256")):
        return ()
    return tuple(v for v in pair.variants if pair.role(v) == REFERENCE)


def _change_text(v: VariantVerdict) -> str:
    """' time +7.1% [+5.2, +9.0] (margin 2.0%)' for a verdict other than SAME, '' for SAME: the time,
    or the ratio to the baseline where that (not the time) carries the verdict (a baseline that
    slowed makes a variant FASTER by ratio while its own time grew)."""
    by = {m.metric: m for m in v.metrics}
    m = by.get("time")
    if "ratio" in by and (m is None or (by["ratio"].verdict == v.verdict and m.verdict != v.verdict)):
        m = by["ratio"]
    if v.verdict == "SAME" or m is None:
        return ""
    c = m.change
    return (f" {m.metric} {(c.value - 1) * 100:+.1f}% [{(c.low - 1) * 100:+.1f}, {(c.high - 1) * 100:+.1f}]"
            f" (margin {m.margin * 100:.1f}%)")


def pair_key(key: str, world: int, gpu_name: str | None) -> str:
    """The key of a pair's evidence: the GPU's (`key`) for one process; for a multi-rank pair the
    GPU and the rank count ('4x_h200'): 2 and 4 ranks are other measurements, kept in other files."""
    return hardware_key(gpu_name, world) if world > 1 and gpu_name else key


def collective_bandwidth(data: Any) -> list[dict[str, Any]]:
    """Per variant and collective operation of a multi-rank run with a timeline (`--profile minimal`
    or more: nsys on every rank), the transfer time once every rank had arrived and its bus
    bandwidth (nccl-tests' convention, analyze.ranks.report); [] without one."""
    from ..analyze.records import frame_records
    from ..analyze.ranks.report import rank_report

    if data.timeline.empty or "rank" not in data.timeline or data.ranks.empty:
        return []
    table = rank_report(data.timeline, data.ranks, data.info).bandwidth
    return frame_records(table.loc[:, ["variant", "op", "collectives", "collective_ns", "message_bytes",
                                      "busbw_gb_per_s"]])


def evidence_path(opts: BenchOptions, chapter_key: str, key: str) -> Path:
    """The expectations file a pair is judged against: --expectations, else the chapter's file beside
    the pair modules ($AISP_KERNELS's or the shipped kernels/). A module under $AISP_KERNELS that
    carries a shipped pair's name (the gate's planted slowdowns, tests/fixtures/gate_kernels) is
    judged against the shipped evidence when its folder has none: without that every verdict was
    NEW and the planted +10% passed (exit 0) on a 4-GPU H200 visit. Recording never falls back:
    a session of such a module is written beside it, not into the shipped file."""
    if opts.expectations:
        return opts.expectations
    own = exp.expectations_path(kernels_root(), chapter_key, key)
    if opts.update_expectations or own.exists():
        return own
    shipped = exp.expectations_path(data_root() / "kernels", chapter_key, key)
    return shipped if shipped.exists() else own


def bench_one(pair: KernelPair, runs: Any, key: str, opts: BenchOptions,
              progress: Callable[[str], None] = lambda m: None, machine: Machine | None = None) -> PairOutcome:
    """Check and time (and profile) one pair into the RunDatabase `runs`; judge it against its
    recorded evidence; maybe record it. A pair that cannot run here is skipped with the reason."""
    machine = machine or capabilities.detect_machine()
    answer = runnable(pair, machine)
    if not answer.ok and answer.error is not NoGpuError:     # e.g. a pair that needs sm_100, on Hopper
        return PairOutcome(pair.name, None, "skipped", answer.reason)
    key = pair_key(key, opts.world_size(pair), machine.gpu_name)
    path = evidence_path(opts, pair.chapter_key, key)
    recorded = exp.load(path)
    entry, kind = recorded["pairs"].get(pair.name), gate_kind(pair)
    found: list[VariantVerdict] = []
    bandwidth: list[dict[str, Any]] = []
    said: list[str] = [recorded.get("outdated", "")]
    library = machine_references(pair, entry, kind)
    chase = undecided(pair.name, entry, kind, opts.pair_budget_s, max(opts.processes, opts.max_processes),
                      link_bound=pair.distributed, library=library)

    def annotate(data: Any) -> None:
        if not data.samples.empty:
            found.extend(gate_verdicts(pair.name, data.samples, kind, entry,
                                       (data.info.get("sensor") or {}).get("sm_clock_max_mhz"),
                                       recorded.get("outdated", ""), data.compiles,
                                       Traits(link_bound=pair.distributed, library=library)))
            for v in found:
                if chase.stopped and v.verdict == AMBIGUOUS and not v.is_reference and not v.library:
                    v.cause = "; ".join(c for c in (v.cause, chase.stopped) if c)
            data.verdicts = verdict_frame(found, str(path))
        bandwidth.extend(collective_bandwidth(data))
        source = data.info.get("source") or {}
        said.append(exp.other_code(entry, source.get("sha256"), source.get("code_sha256")))
    try:
        with paused(kind != "gpu"):      # host-side time: fresh processes (collect.process.preload)
            result = runs.profile(opts.run_options(pair, chase), progress, annotate)
    except AispError as e:                 # a profiler failed: the gate must fail too
        return PairOutcome(pair.name, None, "error", str(e))
    if result.error is not None:
        return PairOutcome(pair.name, result.run["run_id"], "failed_check", str(result.error), found)
    if chase.stopped:
        progress(f"      {chase.stopped}")
    outcome = PairOutcome(pair.name, result.run["run_id"], "ok", "; ".join(m for m in said if m), found,
                          strict=opts.strict, hardware_key=key, bus_bandwidth=bandwidth)
    if opts.update_expectations:
        record(outcome, result.data, path, recorded, key, opts.force)
    return outcome


def record_runs(runs: list[Any], expectations: Path | None = None, force: bool = False) -> list[PairOutcome]:
    """`bench record`: stored runs (RunData) added as sessions of their pairs' evidence, in the
    file of their GPU (or `expectations`). A run without timed samples, or whose check failed,
    is refused; so is a throttled one unless `force`."""
    out = []
    for data in runs:
        pair, key = data.run.get("pair"), hardware_key(data.gpu_name, int(data.info.get("world_size") or 1))
        outcome = PairOutcome(str(pair), data.run_id, "ok")
        if not pair or data.samples.empty or data.run.get("status") != "ok":
            outcome.status, outcome.message = "refused", "not recorded: no timed samples of a passing check in this run"
        else:
            path = expectations or exp.expectations_path(kernels_root(), pair.split(".", 1)[0], key)
            record(outcome, data, path, exp.load(path), key, force)
        out.append(outcome)
    return out


def record(outcome: PairOutcome, data: Any, path: Path, recorded: dict[str, Any], key: str, force: bool) -> None:
    """Add the run's samples as a session of the pair's evidence, unless it is one already (even with
    `force`: its processes would count twice), its clocks were throttled, or it measured other code
    than the pair's module now (a fixture, an older version)."""
    info, limits = data.info, data.info.get("sensor") or {}
    if exp.recorded_session((recorded.get("pairs") or {}).get(outcome.pair), data.run_id) is not None:
        outcome.message = (f"not recorded: run {data.run_id} is already a session of {outcome.pair} in {path}; "
                           "recording it again would count its processes twice")
        return
    other_code = source_mismatch(info.get("source"), outcome.pair)
    if why := refusal(other_code, 0, force):
        outcome.message = why
        return
    session = exp.session_of(data.samples, provenance(data), limits, headline_kind(info))
    if why := refusal("", session["clocks"]["throttled_samples"], force):
        outcome.message = why
        return
    pairs = dict(recorded.get("pairs") or {})
    pairs[outcome.pair] = exp.add_session(pairs.get(outcome.pair), session, info.get("sizes") or {})
    exp.save(path, {"format": exp.FORMAT, "hardware_key": key, "chapter": outcome.pair.split(".", 1)[0],
                    "updated_at": utc_now(), "pairs": pairs})
    outcome.recorded = str(path)


def provenance(data: Any) -> dict[str, Any]:
    """Where a session came from: the run, the commit, the card and the software."""
    run, info = data.run, data.info
    env = info.get("env") or {}
    return {"run_id": run["run_id"], "date": run.get("created_at"), "git_sha": run.get("git_sha"),
            "gpu_name": run.get("gpu_name"), "driver_version": run.get("driver_version"),
            "torch_version": env.get("torch_version"), "cuda_version": env.get("torch_cuda_version"),
            "triton_version": env.get("triton_version"), "host": info.get("host"), "boot_id": info.get("boot_id"),
            "source_sha256": (info.get("source") or {}).get("sha256"),
            "code_sha256": (info.get("source") or {}).get("code_sha256"),
            "compile_cache": info.get("compile_cache", SHARED_COMPILE_CACHE),
            "child_start": child_start(info), "triton_binaries": info.get("triton_binaries")}


def child_start(info: dict[str, Any]) -> str:
    """How the run's check and timing processes started: "forked" (all from the preloaded torch process,
    collect.process.preload), "fresh" (none), "mixed" (the server stopped serving part way)."""
    forked = set(info.get("forked_from_preload") or [])
    steps = {name for name in info.get("commands") or {} if name == "check" or name.startswith("timing_p")}
    return "fresh" if not forked else ("forked" if forked >= steps else "mixed")


def current_hardware_key(machine: Machine | None = None) -> str:
    """The key of GPU 0 (NoGpuError without one: a benchmark needs a GPU)."""
    machine = machine or capabilities.detect_machine()
    if not machine.gpu:
        raise NoGpuError("no CUDA GPU found; `aisp-prof bench run` times pairs on a GPU machine")
    return hardware_key(machine.gpu_name, 1)


def gate_error(outcomes: list[PairOutcome], updating: bool = False) -> AispError | None:
    """What fails `bench run`, first what fails first: a failed check (exit 7: no speed verdict
    stands on one), a regression, a variant gone missing or a pair that errored (11), then with
    `updating` a passing pair whose evidence was not recorded (throttled, exit 1); None: it passes."""
    failed_checks = [o for o in outcomes if o.status == "failed_check"]
    if failed_checks:
        return CorrectnessError("failed the correctness check: "
                                + "; ".join(f"{o.pair} ({o.message or 'see its stored run'})" for o in failed_checks))
    failing = sorted({f"{v.pair}:{v.variant}" for o in outcomes for v in o.failing}
                     | {o.pair for o in outcomes if o.status == "error"})
    if failing:
        return RegressionError(f"regressed, missing or failed: {', '.join(failing)}")
    refused = [o.pair for o in outcomes if updating and o.status == "ok" and not o.recorded]
    if refused:
        return NotRecordedError(f"not recorded: {', '.join(refused)} (throttled; see the table, or pass --force)")
    return None


def record_error(outcomes: list[PairOutcome], as_json: bool = False) -> NotRecordedError | None:
    """What fails `bench record`: a run that was refused (its message says why, on the lines above or,
    `as_json`, as its record's "message" in the JSON: a --json reader sees no lines above); None: all recorded."""
    refused = [o.run_id for o in outcomes if not o.recorded]
    if refused:
        where = ('each one\'s "message" in the JSON on stdout says why' if as_json else
                 "see the messages above")
        return NotRecordedError(f"not recorded: {', '.join(map(str, refused))} ({where})")
    return None
