"""The process the profilers watch.

It builds inputs, warms every variant up (compilation and autotuning stay outside the
measurement), then runs each variant inside nested NVTX ranges aisp > <pair> > <variant>.
`--mode check` instead runs the correctness check and then times the variants interleaved with
CUDA events (aisp_prof.collect.timing.timer: GPU time, latency and steady time per call, L2 flushed,
inputs rotated, the GPU's clocks beside each round), with no profiler collecting; `--mode bench` only times them (one of the bench's repeat
processes, with the reference kernels); `--mode sanitize` only checks (under compute-sanitizer).
`--mode check --nsys-iterations N` then also runs the nsys timeline's iterations inside a
cudaProfilerStart/Stop capture range (`capture_for_nsys`): one process under nsys does what a
check process and an nsys process did, so start-up, imports and compilation are paid once.
It reports through JSON files, never through stdout, because profilers interleave their own
output there.

    python -m aisp_prof.collect.process.child --pair ch09.fused_l2norm --variants baseline,cuda \
        --mode profile --out /tmp/child.json
    python -m aisp_prof.collect.process.child --pair mine.fused_add --pair-file /home/me/fused_add.py ...
    nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop ... \
        python -m aisp_prof.collect.process.child --pair ch09.fused_l2norm --variants baseline,cuda \
        --mode check --out check.json --nsys-iterations 5 --nsys-out nsys_child.json
"""
from __future__ import annotations

import dataclasses
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from ... import pairs as pairs_mod
from ...errors import AispError, NoGpuError, ProfilerFailedError
from ...naming import NSYS_CHILD_JSON, nvtx_path, rank_path
from ..ranks import group as ranks
from ..code.builds import builds_so_far
from ..code.binary_store import require_manager
from ..code.compile_cache import fresh_compile_cache
from .child_args import parser, sampling_plan
from ..code.dynamo import stop_compile_workers
from ..timing.timer import SamplingPlan


def nvtx_markers() -> tuple[Callable[[str], Any], Callable[[], Any]]:
    try:
        import nvtx  # the NVTX package: one push per call, no torch dependency

        return (lambda msg: nvtx.push_range(msg)), nvtx.pop_range
    except ImportError:
        import torch

        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop


def software_env() -> dict[str, Any]:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    env: dict[str, Any] = {
        "gpu_name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "gpu_memory_bytes": props.total_memory,
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda,
    }
    try:
        import triton

        env["triton_version"] = triton.__version__
    except ImportError:
        env["triton_version"] = None
    return env


def run_check(pair: pairs_mod.KernelPair, sizes: dict[str, int], variants: list[str],
              plan: SamplingPlan, references: bool = False) -> dict[str, Any]:
    """The correctness check; then, if every variant passed, their interleaved timing (the
    first timing process)."""
    from ..correctness.check import check_pair

    began = time.monotonic()
    result = check_pair(pair, sizes, device="cuda", variants=variants)
    report: dict[str, Any] = {"check": result.to_dict(), "timing": {}, "samples": [], "env": software_env(),
                              "phases_s": {"check": round(time.monotonic() - began, 3)}}
    ran = [v for v in variants if v not in result.skipped_variants]   # no kernel at these sizes: not timed
    if result.passed and "baseline" in ran:   # no timing of a variant that is wrong
        began = time.monotonic()
        report.update(run_timing(pair, sizes, ran, plan, references=references, process=0))
        report["phases_s"]["timing"] = round(time.monotonic() - began, 3)
    return report


def run_timing(pair: pairs_mod.KernelPair, sizes: dict[str, int], variants: list[str], plan: SamplingPlan,
               references: bool, process: int) -> dict[str, Any]:
    """Interleaved samples of the variants (and the reference kernels), with the GPU's clocks,
    and what torch.compile did meanwhile (`compiles`: rows of `dynamo.compile_row`)."""
    from ...stats import summarize_samples
    from ..code.dynamo import observer_if_compiling
    from ..timing.sensors import open_sensor
    from ..timing.timer import pair_launches, reference_launches, time_rounds

    sensor = open_sensor(_gpu_index())
    launches, input_sets = pair_launches(pair, variants, sizes, seed=process)
    compiles = first_calls(launches, variants, process) if process > 0 else []
    if references:
        launches = {**launches, **reference_launches()}
    observer = observer_if_compiling()
    samples = time_rounds(launches, plan, sensor, process, observer=observer)
    if observer is not None:
        compiles += observer.rows(variants, process)
    del input_sets
    stats = summarize_samples(samples)
    timing = {v: {**stats.get(v, {}), "input_sets": len(launches[v]), "l2_flushed": bool(plan.flush_bytes),
                  "interleaved": plan.interleaved} for v in launches}
    return {"timing": timing, "samples": samples, "sensor": sensor.limits(), "env": software_env(),
            "plan": dataclasses.asdict(plan), "compiles": compiles}


def first_calls(launches: Any, variants: list[str], process: int) -> list[dict[str, Any]]:
    """In a timing process after the check's: each variant's first call, synchronized, timed on
    the wall and watched for compiles (phase "warm_process": Dynamo traces again in a new
    process, while Inductor's and Triton's on-disk caches are warm from the check; "fresh_process"
    where this process compiles in empty caches of its own: a recording's, a gate's further ones)."""
    import torch

    from ..code.compile_cache import in_fresh_cache
    from ..code.dynamo import CompileWatch, compile_row

    rows, phase = [], "fresh_process" if in_fresh_cache() else "warm_process"
    for v in variants:
        watch, began = CompileWatch(), time.perf_counter_ns()
        launches[v][0]()
        torch.cuda.synchronize()
        rows.append(compile_row(v, process, phase, watch.take(),
                                first_call_wall_ns=time.perf_counter_ns() - began))
        stop_compile_workers()
    return rows


def run_profile(pair: pairs_mod.KernelPair, sizes: dict[str, int], variants: list[str],
                warmup: int, iterations: int) -> dict[str, Any]:
    import torch

    push, pop = nvtx_markers()
    inputs = pair.make_inputs(sizes, "cuda", 0)
    launches = _warm_launches(pair, inputs, variants, warmup)
    torch.cuda.synchronize()
    stop_compile_workers()           # no compile worker runs beside the profiled iterations
    ranks.barrier()                  # the ranks of a job start the iterations together
    flush = _flush_buffer()
    for _ in range(iterations):
        for v, launch in launches.items():
            if flush is not None:      # a cold L2, as the timer and ncu see each call (outside the ranges)
                flush.zero_()
            # nested ranges, so ncu's --nvtx-include "aisp/<pair>/<variant>/" matches them
            for name in nvtx_path(pair.name, v).split("/"):
                push(name)
            launch()
            for _ in range(3):
                pop()
            torch.cuda.synchronize()
    return {"variants": variants, "iterations": iterations, "warmup": warmup}


def _warm_launches(pair: pairs_mod.KernelPair, inputs: Any, variants: list[str], warmup: int) -> dict[str, Any]:
    """Each variant's closure, called `warmup` times; a variant whose backend has no kernel for
    these sizes (check.no_kernel_reason: the check skipped it too) is left out, not profiled."""
    from ..correctness.check import no_kernel_reason

    launches = {}
    for v in variants:
        try:
            launch = pair.variants[v](inputs)
            for _ in range(warmup):
                launch()
        except RuntimeError as exc:
            if no_kernel_reason(exc) is None:
                raise
            continue
        launches[v] = launch
    return launches


def _flush_buffer() -> Any:
    """Twice the L2 of int32 to memset before each profiled call: without it nsys timed the calls
    with their inputs still in L2 from the call before (ch14.triton_persistent's persistent
    kernel: 95 us under nsys, 169 us by CUDA events and 153 us by ncu, both with a cold L2)."""
    import torch

    from ..timing.timer import l2_flush_bytes

    return torch.empty(l2_flush_bytes() // 4, dtype=torch.int32, device="cuda")


def _profiler() -> tuple[Callable[[], Any], Callable[[], Any]]:
    """cudaProfilerStart and cudaProfilerStop (errors raised by torch)."""
    import torch.cuda.profiler

    return torch.cuda.profiler.start, torch.cuda.profiler.stop


def capture_for_nsys(pair: pairs_mod.KernelPair, sizes: dict[str, int], variants: list[str],
                     warmup: int, iterations: int) -> dict[str, Any]:
    """The nsys timeline's part of a check process: `run_profile` (inputs, warm-up, the
    iterations in their NVTX ranges, as the separate nsys process ran them) between
    cudaProfilerStart and cudaProfilerStop. Returns run_profile's report and the wall-clock
    time the capture began (`capture_started_at`, seconds since the epoch), which splits the
    process's wall time into the check's part and the capture's.

    Called only after the check and the timing are done, never around them: nsys traces every
    CUDA API call it collects, and that host-side cost would land inside the CUDA-event times
    of a launch-bound variant (tens of microseconds of Python and driver per launch). With
    `--capture-range=cudaProfilerApi` nsys starts collecting only when the application calls
    cudaProfilerStart, and with `--capture-range-end=stop` it stops at cudaProfilerStop while the
    application runs on (Nsight Systems User Guide, CLI profile switches --capture-range and
    --capture-range-end, https://docs.nvidia.com/nsight-systems/UserGuide/index.html);
    cudaProfilerStart "enables profile collection by the active profiling tool for the current
    context" (https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__PROFILER.html).
    Its injection library is loaded from the start, idle: benchmarks/profile_cost.py
    --compare-bare checks that the timings agree with a process under no profiler.

    Before the capture, what the check and the timing left behind is dropped, so the capture
    sees what a fresh nsys process saw: Dynamo's compiled frames (a variant compiles again, from
    Inductor's and Triton's warm on-disk caches, as a new process did; it also keeps the factory
    calls of one process under Dynamo's recompile limit) and the allocator's cached blocks (the
    inputs are allocated again)."""
    import torch

    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    start, stop = _profiler()
    began = time.time()
    start()
    try:
        report = run_profile(pair, sizes, variants, warmup, iterations)
    finally:
        torch.cuda.synchronize()
        stop()
    return {**report, "sizes": sizes, "capture_started_at": began}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    started = time.time()
    if args.fresh_compile_cache:
        fresh_compile_cache(args.out.parent)      # in the run folder: gone with a failed run, however it ends
    rank = ranks.from_env()
    if rank is not None:          # one rank of a torchrun job: its own reports
        args.out = rank_path(args.out, rank.rank)
        args.nsys_out = rank_path(args.nsys_out or args.out.with_name(NSYS_CHILD_JSON), rank.rank)
    laps: dict[str, float] = {}    # seconds of each phase before the check: report["phases_s"] (the gate's cost)
    try:
        import torch

        laps["import_torch"] = round(time.time() - started, 3)
        pair, began = None, time.time()
        require_manager()                  # Triton's binary store (a gate's): found before any compile
        if args.wait_for is not None:      # started beside the check: load everything, then wait for the GPU
            pair = load_pair(args.pair, args.pair_file)
            wait_for_release(args.wait_for, args.wait_parent)
        if not torch.cuda.is_available():
            raise NoGpuError("no CUDA GPU visible to torch in the profiled process")
        if rank is not None:
            ranks.join(rank)
        pair = pair or load_pair(args.pair, args.pair_file)
        laps["load_pair"] = round(time.time() - began, 3)     # with the wait for the GPU, for a child beside the check
        sizes = pairs_mod.pair_sizes(pair, args.sizes)
        variants = args.variants.split(",")
        if args.mode == "profile":
            report = run_profile(pair, sizes, variants, args.warmup, args.iterations)
        elif args.mode == "sanitize":      # under compute-sanitizer: the check only, no timing
            from ..correctness.check import check_pair

            report = {"check": check_pair(pair, sizes, device="cuda", variants=variants).to_dict()}
        else:
            from ..timing.timer import l2_flush_bytes

            plan = sampling_plan(args, l2_flush_bytes())
            report = (run_check(pair, sizes, variants, plan, args.references) if args.mode == "check"
                      else run_timing(pair, sizes, variants, plan, args.references, args.process))
        if args.mode == "check":           # the capture leaves out what had no kernel at these sizes
            variants = [v for v in variants if v not in report["check"].get("skipped_variants", {})]
        report.update(ok=True, sizes=sizes, wall_s=time.time() - started, builds=builds_so_far(),
                      phases_s={**laps, **report.get("phases_s", {})})
        code = 0
    except AispError as exc:
        report = {"ok": False, "error": str(exc), "error_type": type(exc).__name__}
        code = exc.exit_code
    _write(args.out, report)      # before any capture: the check's report is complete on its own
    if code == 0 and args.mode == "check" and args.nsys_iterations > 0 and report["check"]["passed"]:
        code = _capture_report(args.nsys_out or args.out.with_name(NSYS_CHILD_JSON),
                               lambda: capture_for_nsys(pair, sizes, variants, args.warmup, args.nsys_iterations))
    if args.release is not None and code == 0 and args.mode == "check" and report["check"]["passed"]:
        release_gpu(args.release)
    if rank is not None:
        ranks.leave()
    return code


def release_gpu(path: Path) -> None:
    """This process is done with the GPU: its cached memory goes back to the driver, then `path`
    appears (written whole: a waiting process never sees it half made)."""
    import torch

    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(f"{time.time()}\n")
    partial.replace(path)


def wait_for_release(path: Path, parent_pid: int = 0, poll_s: float = 0.02) -> None:
    """Block until `path` exists (`release_gpu` in the check process), never touching CUDA.
    ProfilerFailedError if `parent_pid` (the run that started this process) ends first: a run
    killed with SIGKILL then leaves no process waiting forever."""
    while not path.exists():
        if parent_pid:
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                raise ProfilerFailedError(f"the run that started this profile (pid {parent_pid}) ended") from None
            except PermissionError:
                pass                  # alive, another user's
        time.sleep(poll_s)


def _gpu_index() -> int:
    """The GPU this process uses (a rank's own under torchrun), for NVML."""
    import torch

    return nvml_index(torch.cuda.current_device(), os.environ.get("CUDA_VISIBLE_DEVICES"))


def nvml_index(cuda_index: int, visible: str | None) -> int:
    """NVML's index of CUDA device `cuda_index`: NVML ignores CUDA_VISIBLE_DEVICES, so an agent
    given GPUs 2,3 (`run --nnodes` on one host) must read GPU 2's sensors for its device 0. Entries
    that are not plain indices (UUIDs) leave the index as it is."""
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    if cuda_index < len(entries) and entries[cuda_index].isdigit():
        return int(entries[cuda_index])
    return cuda_index


def load_pair(name: str, pair_file: Path | None) -> pairs_mod.KernelPair:
    """The pair called `name`: from the kernels folder, or from `pair_file` when given."""
    if pair_file is None:
        return pairs_mod.find(name)
    from ...errors import UnknownTargetError
    from ...pairs.files import load_file

    pair = load_file(pair_file)
    if pair.name != name:
        raise UnknownTargetError(f"{pair_file} defines pair {pair.name!r}, not {name!r} (was it edited meanwhile?)")
    return pair


def _write(path: Path, report: dict[str, Any]) -> None:
    path.write_text(json.dumps(report, indent=2, default=str))


def _capture_report(path: Path, capture: Callable[[], dict[str, Any]]) -> int:
    """Run the capture and write its report (as the nsys child's was: variants, iterations,
    warmup, ok, sizes, wall_s) to `path`; the exit code."""
    started = time.time()
    try:
        report = capture()
        report.update(ok=True, wall_s=time.time() - started)
        code = 0
    except AispError as exc:
        report = {"ok": False, "error": str(exc), "error_type": type(exc).__name__}
        code = exc.exit_code
    _write(path, report)
    return code


if __name__ == "__main__":
    sys.exit(main())
