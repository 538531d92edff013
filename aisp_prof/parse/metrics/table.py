"""The one table that maps Nsight Compute metric names to tidy, unit-carrying columns.

Collection asks ncu for exactly these metrics (nothing else, so a profile costs few replay
passes); parsing renames them with the same table. Keeping it as data, not code, means a new
counter is one line here and shows up in the command line, the parser and the database.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    raw: str        # ncu metric name, exactly as `ncu --metrics` takes it
    column: str     # tidy snake_case column, unit in the name
    unit: str       # the unit of `column` after parsing with --print-units base
    group: str      # what the number is for: time, sol, flops, tensor, bytes, peak, stall, dsmem, occupancy, launch


def _m(raw: str, column: str, unit: str, group: str) -> Metric:
    return Metric(raw, column, unit, group)


_FLOP_OPS = ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")

# Tensor-core operation counters: one per input precision. They count wgmma (HGMMA/QGMMA) on
# Hopper as well as mma.sync, and are exact FLOP counts (2*M*N*K for a GEMM).
TENSOR_PATHS = {
    "fp16": "sm__ops_path_tensor_src_fp16",
    "bf16": "sm__ops_path_tensor_src_bf16_dst_fp32",
    "tf32": "sm__ops_path_tensor_src_tf32_dst_fp32",
    "fp8": "sm__ops_path_tensor_src_fp8",
    "int8": "sm__ops_path_tensor_src_int8",
    "fp64": "sm__ops_path_tensor_src_fp64",
}

STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)

# PC-sampling names differ slightly: no_instructions, warpgroup_arrive; no gmma
PCSAMP_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instructions",
    "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
    "warpgroup_arrive",
)

METRICS: tuple[Metric, ...] = (
    _m("gpu__time_duration.sum", "duration_ns", "ns", "time"),
    _m("sm__cycles_elapsed.max", "sm_cycles_elapsed", "cycle", "time"),
    _m("sm__cycles_elapsed.avg.per_second", "sm_clock_hz", "hz", "time"),
    _m("dram__cycles_elapsed.avg.per_second", "dram_clock_hz", "hz", "time"),
    # speed of light: percent of peak of the byte and instruction counters collected anyway,
    # so it costs no replay pass of its own (ncu's headline sm__throughput and
    # gpu__compute_memory_throughput are maxima over dozens of sub-unit counters: 10 passes)
    _m("dram__bytes.sum.pct_of_peak_sustained_elapsed", "sol_dram_pct", "%", "sol"),
    _m("lts__t_bytes.sum.pct_of_peak_sustained_elapsed", "sol_l2_pct", "%", "sol"),
    _m("l1tex__t_bytes.sum.pct_of_peak_sustained_elapsed", "sol_l1_pct", "%", "sol"),
    _m("sm__inst_executed.avg.pct_of_peak_sustained_elapsed", "sol_sm_issue_pct", "%", "sol"),
    _m("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "tensor_pipe_active_pct", "%", "sol"),
    _m("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sol_sm_pct", "%", "sol_breakdown"),
    _m("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "sol_memory_pct", "%", "sol_breakdown"),
    # scalar floating-point instructions, per thread (an FMA is two FLOPs, see analyze)
    *(_m(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum", f"inst_{op}", "inst", "flops")
      for op in _FLOP_OPS),
    *(_m(f"{raw}.sum", f"flops_tensor_{prec}", "flop", "tensor") for prec, raw in TENSOR_PATHS.items()),
    # bytes per memory level
    _m("dram__bytes_read.sum", "dram_read_bytes", "byte", "bytes"),
    _m("dram__bytes_write.sum", "dram_write_bytes", "byte", "bytes"),
    _m("lts__t_bytes.sum", "l2_bytes", "byte", "bytes"),
    _m("l1tex__t_bytes.sum", "l1_bytes", "byte", "bytes"),
    _m("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "shared_wavefronts", "wavefront", "bytes"),
    _m("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum", "tma_load_bytes", "byte", "bytes"),
    _m("l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum", "tma_store_bytes", "byte", "bytes"),
    # peak rates (per cycle) that ceilings are made of; cost no replay pass
    _m("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", "peak_ffma_per_cycle", "inst/cycle", "peak"),
    _m("sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", "peak_dfma_per_cycle", "inst/cycle", "peak"),
    _m("sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained", "peak_hfma_per_cycle", "inst/cycle", "peak"),
    *(_m(f"{raw}.sum.peak_sustained", f"peak_tensor_{prec}_flop_per_cycle", "flop/cycle", "peak")
      for prec, raw in TENSOR_PATHS.items()),
    _m("dram__bytes.sum.peak_sustained", "peak_dram_bytes_per_cycle", "byte/cycle", "peak"),
    _m("lts__t_bytes.sum.peak_sustained", "peak_l2_bytes_per_cycle", "byte/cycle", "peak"),
    _m("l1tex__t_bytes.sum.peak_sustained", "peak_l1_bytes_per_cycle", "byte/cycle", "peak"),
    _m("lts__cycles_elapsed.avg.per_second", "l2_clock_hz", "hz", "peak"),
    # warp stall reasons: warps stalled per issued instruction (cycles per instruction)
    *(_m(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", f"stall_{r}", "ratio", "stall")
      for r in STALL_REASONS),
    _m("smsp__inst_executed.sum", "inst_executed", "inst", "stall"),
    # the same reasons from PC sampling: one pass for all of them, approximate for short kernels
    *(_m(f"smsp__pcsamp_warps_issue_stalled_{r}", f"samples_stall_{r}", "sample", "stall_sampled")
      for r in PCSAMP_REASONS),
    _m("smsp__pcsamp_sample_count", "samples_total", "sample", "stall_sampled"),
    _m("smsp__pcsamp_interval_cycles", "sample_interval_cycles", "cycle", "stall_sampled"),
    # distributed shared memory (thread-block clusters): traffic over the SM-to-SM crossbar.
    # Names as `ncu --query-metrics --chip gh100` lists them (H100, Nsight Compute 2025.3.1).
    _m("l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum", "dsmem_xbar_read_bytes", "byte", "dsmem"),
    _m("l1tex__m_l1tex2xbar_write_bytes_mem_dshared.sum", "dsmem_xbar_write_bytes", "byte", "dsmem"),
    _m("l1tex__t_requests_pipe_lsu_mem_dshared_op_ld.sum", "dsmem_load_requests", "request", "dsmem"),
    _m("l1tex__t_requests_pipe_lsu_mem_dshared_op_st.sum", "dsmem_store_requests", "request", "dsmem"),
    _m("l1tex__t_requests_pipe_lsu_mem_dshared_op_atom.sum", "dsmem_atomic_requests", "request", "dsmem"),
    # global atomics (one RED per block vs one per element): requests to L1TEX
    _m("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", "global_atomic_requests", "request", "dsmem"),
    _m("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum", "global_reduction_requests", "request", "dsmem"),
    # occupancy and launch configuration
    _m("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved_occupancy_pct", "%", "occupancy"),
    _m("sm__maximum_warps_per_active_cycle_pct", "theoretical_occupancy_pct", "%", "occupancy"),
    _m("launch__grid_size", "grid_size", "block", "launch"),
    _m("launch__block_size", "block_size", "thread", "launch"),
    _m("launch__registers_per_thread", "registers_per_thread", "register", "launch"),
    _m("launch__shared_mem_per_block_static", "static_shared_bytes", "byte", "launch"),
    _m("launch__shared_mem_per_block_dynamic", "dynamic_shared_bytes", "byte", "launch"),
    _m("launch__waves_per_multiprocessor", "waves_per_sm", "wave", "launch"),
    _m("launch__sm_count", "sm_count", "sm", "launch"),
    # thread-block cluster shape (1 x 1 x 1, or 0, without clusters): probed on an H100 with ncu 2025.3.1
    _m("launch__cluster_dim_x", "cluster_dim_x", "block", "cluster"),
    _m("launch__cluster_dim_y", "cluster_dim_y", "block", "cluster"),
    _m("launch__cluster_dim_z", "cluster_dim_z", "block", "cluster"),
    _m("launch__cluster_max_active", "cluster_max_active", "cluster", "cluster"),
)

BY_RAW = {m.raw: m for m in METRICS}
BY_COLUMN = {m.column: m for m in METRICS}


DEFAULT_GROUPS = ("time", "sol", "flops", "tensor", "bytes", "peak", "stall", "dsmem", "cluster", "occupancy", "launch")


def metric_names(groups: tuple[str, ...] = DEFAULT_GROUPS) -> list[str]:
    """The raw names handed to `ncu --metrics` for these groups."""
    return [m.raw for m in METRICS if m.group in groups]
