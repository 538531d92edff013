"""Chapter 14 on several GPUs: an fp32 gradient all-reduce vs int8 quantize -> exchange -> dequantize.

The book's `nccl_quantization` never leaves one GPU (its honest single-GPU port is
`ch14.gpu_quantization`); this pair is what its name promised: a gradient-sized all-reduce across
the ranks of a `torchrun` job, through NCCL (`torch.distributed`), where each rank holds x_r
[numel] fp32 and every rank must end with sum_r x_r.

Variants (every one out of place: x is never written, so every call does the same work):
  baseline      `dist.all_reduce` of an fp32 copy of x: what a data-parallel step runs. The copy
                (8 B per element of local DRAM traffic, ~0.1-0.2 ms at 256 MiB) is there because
                all_reduce works in place; `fp32_rs_ag` shows fp32 without it.
  fp32_rs_ag    (control) the same sum as fp32 `reduce_scatter_tensor` + `all_gather_into_tensor`,
                out of place: the two halves of a ring all-reduce as two collectives. With it the
                report separates what int8 saves from what the baseline's copy costs.
  int8          per block of BLOCK elements an abs-max scale; x quantized to int8 (one Triton
                kernel), the shards exchanged with one `all_to_all_single` (rank w receives
                every rank's shard w: an int8 reduce-scatter cannot sum, so the sum happens after
                the exchange), dequantized, summed in fp32 and quantized again (one kernel), the
                reduced shards exchanged with one `all_gather_into_tensor`, dequantized (one
                kernel). Scales travel in the same buffer as the int8 payload (4 B per block), so
                each phase is one collective.
  int8_overlap  the same in PIECES pieces, pipelined: piece i's exchange runs on NCCL's stream
                while piece i+1 is quantized on the compute stream (and piece i's reduction
                overlaps piece i+1's exchange); what the profile must show as communication
                hidden behind compute.

Predicted profile (per rank, W ranks, N elements):
  - bytes on the wire per rank: fp32 ring all-reduce 2 (W-1)/W * 4N; int8 2 (W-1)/W * (N + 4N/BLOCK),
    3.97x fewer at BLOCK = 1024: the NCCL kernels' time should drop about 3-4x;
  - kernels: baseline 1 copy + 1 `ncclDevKernel_AllReduce_*`; fp32_rs_ag 1 ReduceScatter + 1
    AllGather; int8 3 Triton kernels + 1 SendRecv (all-to-all) + 1 AllGather; int8_overlap PIECES
    times as many, and NCCL kernels overlapping the Triton ones in time;
  - the quantize kernels are DRAM-bound: each reads 4 B and writes ~1 B per element, ~0.1 ms at
    256 MiB on an H100, small beside a ~0.8 ms fp32 exchange over NVLink (~330 GB/s bus bandwidth
    on the 2-GPU H100 host).
  Collective bus bandwidth follows nccl-tests' convention (algbw x 2 (W-1)/W for all-reduce).

Error bound: int8 abs-max rounding errs by at most scale/2 = amax_block / 254 per element, twice
(before the exchange, and after the reduction). For the Gaussian gradients of make_inputs the
relative L2 error of the sum is ~1.3% (measured on the CPU under TRITON_INTERPRET=1 with gloo, see
tests/test_ch14_quantized_allreduce.py); the tolerance is 3%, on every rank, against the float64
sum of every rank's x (each rank regenerates the others' inputs from their seeds: no
communication in the reference).

FLOPs: (W - 1) adds per element (the sum). Minimum DRAM bytes: x read, the result written (8 B
per element); the exchange is the time that matters, not DRAM.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from aisp_kernels import triton_helpers
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Inputs, KernelPair, Requirements

NAME = "ch14.quantized_allreduce"
DEFAULT_SIZES = {"numel": 1 << 26}          # 256 MiB of fp32: a large DDP gradient bucket set
SMALL_SIZES = {"numel": 1 << 16}
BLOCK = 1024                                 # elements per abs-max scale
PIECES = 4                                   # int8_overlap's pipeline depth
QMAX = 127.0
WORLD_SIZE = 2

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None


def _rank_and_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    raise RequirementError(f"{NAME} runs across ranks: start it through torchrun "
                           f"(aisp-prof run does, with --nproc-per-node {WORLD_SIZE})")


def _rank_input(numel: int, device: str, seed: int, rank: int) -> torch.Tensor:
    """Rank `rank`'s gradient for trial `seed`: any rank can regenerate any other's."""
    gen = torch.Generator(device=device).manual_seed(seed * 1009 + rank)
    return torch.randn(numel, generator=gen, device=device, dtype=torch.float32)


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    rank, world = _rank_and_world()
    numel = sizes["numel"]
    if numel % (world * PIECES * BLOCK):
        raise ValueError(f"numel must be a multiple of world_size x {PIECES} x {BLOCK} = "
                         f"{world * PIECES * BLOCK}, got {numel}")
    return {"x": _rank_input(numel, device, seed, rank), "seed": seed, "rank": rank, "world_size": world}


def reference(inputs: Inputs) -> torch.Tensor:
    """sum_r x_r in float64, every rank's x regenerated from its seed."""
    x = inputs["x"]
    total = torch.zeros(x.numel(), dtype=torch.float64, device=x.device)
    for r in range(inputs["world_size"]):
        total += _rank_input(x.numel(), x.device.type, inputs["seed"], r).double()
    return total


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """fp32 all_reduce (in place, so on a copy of x)."""
    import torch.distributed as dist

    x = inputs["x"]
    out = torch.empty_like(x)

    def launch() -> torch.Tensor:
        out.copy_(x)
        dist.all_reduce(out)
        return out

    return launch


def fp32_rs_ag(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """fp32 reduce-scatter then all-gather, out of place."""
    import torch.distributed as dist

    x, world = inputs["x"], inputs["world_size"]
    out = torch.empty_like(x)
    shard = torch.empty(x.numel() // world, dtype=x.dtype, device=x.device)

    def launch() -> torch.Tensor:
        dist.reduce_scatter_tensor(shard, x)
        dist.all_gather_into_tensor(out, shard)
        return out

    return launch


# -- Triton kernels: one program per (row, block of BLOCK elements) --------------------------------

def _quantize_kernel(x_ptr, x_row, q_ptr, q_row, s_ptr, s_row, BLOCK: tl.constexpr):
    row, blk = tl.program_id(0), tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * x_row + offs)
    amax = tl.max(tl.abs(v), axis=0)
    scale = tl.where(amax > 0, amax / 127.0, 1.0)
    q = tl.minimum(tl.maximum(tl.floor(v / scale + 0.5), -127.0), 127.0)
    tl.store(q_ptr + row * q_row + offs, q.to(tl.int8))
    tl.store(s_ptr + row * s_row + blk, scale)


def _reduce_requantize_kernel(rq_ptr, rq_row, rs_ptr, rs_row, world, q_ptr, s_ptr, BLOCK: tl.constexpr):
    blk = tl.program_id(0)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for w in range(world):
        acc += tl.load(rq_ptr + w * rq_row + offs).to(tl.float32) * tl.load(rs_ptr + w * rs_row + blk)
    amax = tl.max(tl.abs(acc), axis=0)
    scale = tl.where(amax > 0, amax / 127.0, 1.0)
    q = tl.minimum(tl.maximum(tl.floor(acc / scale + 0.5), -127.0), 127.0)
    tl.store(q_ptr + offs, q.to(tl.int8))
    tl.store(s_ptr + blk, scale)


def _dequantize_kernel(q_ptr, q_row, s_ptr, s_row, y_ptr, y_row, BLOCK: tl.constexpr):
    row, blk = tl.program_id(0), tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    q = tl.load(q_ptr + row * q_row + offs).to(tl.float32)
    tl.store(y_ptr + row * y_row + offs, q * tl.load(s_ptr + row * s_row + blk))


class _Packed:
    """int8 rows of `elems` payload bytes followed by elems / BLOCK fp32 scales: one buffer, so
    payload and scales travel in one collective."""

    def __init__(self, rows: int, elems: int, device: torch.device) -> None:
        self.buf = torch.empty(rows, elems + 4 * (elems // BLOCK), dtype=torch.int8, device=device)
        self.q = self.buf[:, :elems]
        self.s = self.buf[:, elems:].view(torch.float32)


def _quantized(pieces: int, variant: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    """The int8 all-reduce in `pieces` pipelined pieces (1: no pipelining)."""

    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        import torch.distributed as dist

        x, world = inputs["x"], inputs["world_size"]
        if triton is None:
            raise RequirementError(f"{NAME} {variant} variant needs triton (pip install triton)")
        triton_helpers.require_triton(x, NAME)
        interp = triton_helpers.interpreting()
        quantize = triton_helpers.jit(_quantize_kernel, interp)
        reduce_requantize = triton_helpers.jit(_reduce_requantize_kernel, interp)
        dequantize = triton_helpers.jit(_dequantize_kernel, interp)
        shard = x.numel() // world
        elems = shard // pieces                       # per piece, per destination rank
        blocks = elems // BLOCK
        x_rows, out = x.view(world, shard), torch.empty_like(x)
        out_rows = out.view(world, shard)
        bufs = [{"send": _Packed(world, elems, x.device), "recv": _Packed(world, elems, x.device),
                 "mine": _Packed(1, elems, x.device), "all": _Packed(world, elems, x.device)}
                for _ in range(pieces)]
        wait = (lambda work: work.wait()) if pieces > 1 else (lambda work: None)

        def launch() -> torch.Tensor:
            exchanges = []
            for i, b in enumerate(bufs):               # quantize piece i, start its exchange
                cols = slice(i * elems, (i + 1) * elems)
                src = x_rows[:, cols]
                quantize[(world, blocks)](src, src.stride(0), b["send"].q, b["send"].q.stride(0),
                                          b["send"].s, b["send"].s.stride(0), BLOCK=BLOCK, num_warps=4)
                exchanges.append(dist.all_to_all_single(b["recv"].buf, b["send"].buf, async_op=pieces > 1))
            gathers = []
            for work, b in zip(exchanges, bufs):       # reduce piece i, start its gather
                wait(work)
                reduce_requantize[(blocks,)](b["recv"].q, b["recv"].q.stride(0), b["recv"].s,
                                             b["recv"].s.stride(0), world, b["mine"].q, b["mine"].s,
                                             BLOCK=BLOCK, num_warps=4)
                gathers.append(dist.all_gather_into_tensor(b["all"].buf, b["mine"].buf, async_op=pieces > 1))
            for i, (work, b) in enumerate(zip(gathers, bufs)):
                wait(work)
                dst = out_rows[:, i * elems:(i + 1) * elems]
                dequantize[(world, blocks)](b["all"].q, b["all"].q.stride(0), b["all"].s, b["all"].s.stride(0),
                                            dst, dst.stride(0), BLOCK=BLOCK, num_warps=4)
            return out

        launch.wire_bytes_per_rank = wire_bytes(x.numel(), world, "int8")
        return launch

    return factory


def wire_bytes(numel: int, world: int, dtype: str) -> int:
    """Bytes each rank sends per all-reduce: 2 (W-1)/W of the payload (ring convention)."""
    payload = 4 * numel if dtype == "fp32" else numel + 4 * (numel // BLOCK)
    return 2 * (world - 1) * payload // world


def collective_bytes(sizes: Mapping[str, int], world: int) -> dict[str, int]:
    """Each collective's message size S as nccl-tests defines it (whole buffer of an all-reduce,
    whole output of an all-gather, whole input of a reduce-scatter, a rank's whole send buffer of
    an all-to-all), for the bus bandwidths; int8's carry the payload and the scales."""
    n = sizes["numel"]
    packed = n + 4 * (n // BLOCK)
    return {"baseline/AllReduce": 4 * n, "fp32_rs_ag/ReduceScatter": 4 * n, "fp32_rs_ag/AllGather": 4 * n,
            "int8/AlltoAll": packed, "int8/AllGather": packed,
            "int8_overlap/AlltoAll": packed // PIECES, "int8_overlap/AllGather": packed // PIECES}


def flops(sizes: Mapping[str, int]) -> int:
    """(W - 1) adds per element."""
    return (WORLD_SIZE - 1) * sizes["numel"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """x read and the result written, fp32."""
    return 8 * sizes["numel"]


PAIR = KernelPair(
    name=NAME,
    chapter=14,
    lesson="An fp32 gradient all-reduce moves 4 B per element over NVLink; int8 with per-block "
           "scales moves ~1 B (all-to-all, reduce, all-gather), and pipelining the pieces hides "
           "the quantization behind the exchange.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "fp32_rs_ag": fp32_rs_ag, "int8": _quantized(1, "int8"),
              "int8_overlap": _quantized(PIECES, "int8_overlap")},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    tolerance=0.03,
    # the fp32 variants sum W values per element in fp32 (W - 1 roundings of u = 2^-24 each, any
    # order: ring or tree); for Gaussian x_r the sum of |x_r| is <= sqrt(1 + 0.64 (W - 1)) x |sum|
    # in norm, so <= (W - 1) u sqrt(1 + 0.64 (W - 1)) = 1.0e-6 at W = 8; 1e-5 is 10x that, and the
    # int8 variants keep the pair's 3%
    variant_tolerance={"baseline": 1e-5, "fp32_rs_ag": 1e-5},
    requires=Requirements(min_cc=(8, 0), note="2 GPUs (NCCL), one rank each"),
    variant_needs={"int8": ("triton",), "int8_overlap": ("triton",)},
    roles={"fp32_rs_ag": "control"},          # the int8 path's collectives in fp32: quantization alone
    world_size=WORLD_SIZE,
    min_world_size=2,
    collective_bytes=collective_bytes,
)
