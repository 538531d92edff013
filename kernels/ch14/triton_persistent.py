"""Chapter 14: 64 small Triton GEMM launches vs one persistent launch that strides over every tile.

The operation: C[i] = A[i] @ B[i] for i < batch = 64, each [256 x 256] @ [256 x 256], fp16 operands
(row-major), fp32 accumulation, fp16 C.

What the book's code really does (`ch14/{baseline,optimized}_triton_persistent.py`, the kernel in
`ch14/triton_persistent_batched.py`): the baseline loops in Python over the 64 matrices and
launches a plain Triton GEMM for each, grid 8 x 8 (one program per 32 x 32 tile), BLOCK 32 x 32 x
32, 4 warps, 2 stages: 64 launches a call, 64 small programs each. The optimized side launches
ONE persistent kernel with grid = #SMs whose programs stride over all 64 x 8 x 8 = 4096 (batch, m,
n) tiles, GROUP_M = 8 tile order inside each matrix, with the same block configuration at the
spec's commit (so the B200's 6.088x is launches, not tiles). Both sides end with `float(out.sum())`
(a host sync), dropped here as in ch14.attention_eager_sdpa: the harness synchronizes, and it
would add a fixed reduction + copy + host wait to both sides. Later upstream code retuned the
persistent tile for a GB300 (128 x 128 x 64, 8 warps, 3 stages: "~31 -> ~112 TFLOPS"); that is
the third variant here, so that the launch effect and the tile effect are measured apart.

Here (variants as factories; the first call of each compiles its kernel, ~1 s, not timed):
  baseline            the book's 64 launches of the per-tile kernel (per-matrix views made in the
                      factory; the book makes them in the loop).
  persistent          the book's optimized kernel: one launch, grid = min(#SMs, tiles) = 132 on
                      an H100 (148 on the B200), each program ~31 tiles of 32 x 32, same config.
  persistent_128      the same kernel with upstream's later tile, 128 x 128 x 64, 8 warps, 3
                      stages: 256 tiles, ~2 per program.

Predicted profile (what must move in ncu / nsys), default sizes:
  - launches per call: 64 -> 1 (issue 14's target: one launch per call against 64). nsys shows
    64 short kernels (64 CTAs each, ~2-4 us of GPU work) separated by idle gaps, because the
    Python loop issues a Triton launch every ~5-15 us, against one kernel of ~20-40 us;
  - "longer-lived kernels with less relaunch churn" (the book's README): mean kernel duration
    up ~10x, gaps between kernels gone; grid 8 x 8 (64 CTAs, half the SMs idle in every launch)
    -> 132 CTAs that each live for the whole call;
  - DRAM bytes: the same on both sides, A and B read once and C written once (25 MB: every
    operand is read by 8 tiles, from L2 after the first);
  - tensor pipe: 32 x 32 tiles with 4 warps compile to mma.sync (HMMA m16n8k16, no wgmma: a
    warpgroup MMA needs 64 rows) with cp.async (LDGSTS) loads, in both book kernels: the same
    per-tile code, so any tensor-pipe gain in `persistent` is from keeping SMs busy; the 128-tile
    variant compiles to wgmma (HGMMA) and should reach several times the 32-tile throughput;
  - duration on an H100: baseline set by the host's launch rate (~0.4-1 ms), persistent ~30-60 us
    (host-side ~10 us), persistent_128 ~10-20 us; the book's B200 ratio is 6.088x (0.793 ->
    0.130 ms, host sync included).

FLOPs: 2 batch m n k. Minimum DRAM bytes: A and B read once, C written once, fp16.

Correctness: A and B hold integers drawn uniformly from {-2, ..., 2} (exact in fp16), so every
product and partial sum is an integer below 2^24 (exact in fp32 in any order) and |C| <= 4k <=
2048 is exact in fp16: every variant must return the float64 reference exactly. make_inputs
refuses k > 512, where C could leave fp16's exact integers. Tolerance 1e-6 (exactness, with
room for nothing); a lost k block, a wrong tile or a skipped matrix is off by O(1). Under
TRITON_INTERPRET=1 the kernels run on CPU tensors (slowly: the tests use small sizes). The
sanitizer size (SMALL_SIZES) is 5 matrices of 200 x 136 x 72: ragged in every dimension.
"""
from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

import torch

from aisp_kernels import triton_helpers
from aisp_prof.errors import RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements, SizeRule

# NB: discovery loads this file under another module name, so `import triton` is the package.
try:
    import triton
    import triton.language as tl
except ImportError:  # the variants then raise RequirementError when they are asked for
    triton = None
    tl = None

NAME = "ch14.triton_persistent"
DEFAULT_SIZES = {"batch": 64, "m": 256, "n": 256, "k": 256}
SMALL_SIZES = {"batch": 5, "m": 200, "n": 136, "k": 72}
INTERPRETER_PROGRAMS = 3     # persistent programs under TRITON_INTERPRET=1 (no SMs to count)
MAX_EXACT_K = 512            # |C| <= 4 k must stay <= 2048, fp16's last exact integer step of 1
SIZE_RULES = (SizeRule("k", maximum=MAX_EXACT_K, why="every C stays an exact fp16 integer (the check is exact)"),)
VALUE_RANGE = 2              # A and B uniform integers in [-VALUE_RANGE, VALUE_RANGE]


class TileConfig(NamedTuple):
    """One Triton launch configuration (a NamedTuple: discovery loads this module outside
    sys.modules, where a dataclass cannot resolve its annotations)."""

    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int
    group_m: int = 8


BOOK = TileConfig(32, 32, 32, num_warps=4, num_stages=2)                 # both of the book's sides
LATER_TUNE = TileConfig(128, 128, 64, num_warps=8, num_stages=3)         # upstream's GB300 retune


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """a [batch, m, k] and b [batch, k, n], fp16 holding integers in [-2, 2], contiguous."""
    batch, m, n, k = sizes["batch"], sizes["m"], sizes["n"], sizes["k"]
    if k > MAX_EXACT_K:
        raise ValueError(f"k <= {MAX_EXACT_K} keeps every C an exact fp16 integer (the check is exact), got k={k}")
    if batch * max(m * k, k * n, m * n) >= 2**31:
        raise ValueError("operands over 2^31 elements need 64-bit offsets, which these kernels do not use")
    gen = torch.Generator(device=device).manual_seed(seed)

    def ints(*shape: int) -> torch.Tensor:
        return torch.randint(-VALUE_RANGE, VALUE_RANGE + 1, shape, generator=gen, device=device).to(torch.float16)

    return {"a": ints(batch, m, k), "b": ints(batch, k, n)}


# Plain functions, jitted on first use (triton_helpers.jit); the tl.constexpr annotations stay
# unevaluated strings (PEP 563), so this module imports without triton.
def _tile_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The book's baseline: program (i, j) of a 2-D grid computes tile (i, j) of one matrix."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * stride_am + kk[None, :],
                    mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + cols[None, :],
                    mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(tl.float16),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def _persistent_kernel(a_ptr, b_ptr, c_ptr, BATCH, M, N, K, stride_ab, stride_am, stride_bb, stride_bk,
                       stride_cb, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr):
    """PROGRAMS programs stride over all BATCH x tiles_m x tiles_n tiles (matrix-major; inside a
    matrix, GROUP_M-row bands walked column by column, so neighbouring programs share B tiles)."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_matrix = tiles_m * tiles_n
    band = GROUP_M * tiles_n
    ks = tl.arange(0, BLOCK_K)
    for tile in tl.range(tl.program_id(0), BATCH * per_matrix, PROGRAMS):
        mat = tile // per_matrix
        t = tile % per_matrix
        first_m = (t // band) * GROUP_M
        band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
        rows = (first_m + (t % band) % band_rows) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = ((t % band) // band_rows) * BLOCK_N + tl.arange(0, BLOCK_N)
        a_mat, b_mat = a_ptr + mat * stride_ab, b_ptr + mat * stride_bb
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + ks
            a = tl.load(a_mat + rows[:, None] * stride_am + kk[None, :],
                        mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
            b = tl.load(b_mat + kk[:, None] * stride_bk + cols[None, :],
                        mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + mat * stride_cb + rows[:, None] * stride_cm + cols[None, :], acc.to(tl.float16),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


def _check_operands(inputs: Inputs, variant: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The operands, or why not: no triton (RequirementError), a shape or dtype the kernels cannot
    take (ValueError), then a CPU tensor without the interpreter (RequirementError)."""
    a, b = inputs["a"], inputs["b"]
    if triton is None:
        raise RequirementError(f"{NAME} {variant} variant needs triton (pip install triton)")
    for name, t in (("a", a), ("b", b)):
        if t.dtype != torch.float16 or t.dim() != 3 or not t.is_contiguous():
            raise ValueError(f"{name} must be a contiguous 3-D float16 tensor, got {t.dtype} {tuple(t.shape)}")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"a is {tuple(a.shape)} and b is {tuple(b.shape)}: batch or inner dimensions differ")
    triton_helpers.require_triton(a, NAME)
    return a, b


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The book's baseline: one launch of the per-tile GEMM per matrix, grid (m/32, n/32)."""
    a, b = _check_operands(inputs, "baseline")
    (batch, m, k), n = a.shape, b.shape[2]
    cfg = BOOK
    c = torch.empty(batch, m, n, device=a.device, dtype=torch.float16)
    kernel = triton_helpers.jit(_tile_kernel, triton_helpers.interpreting())
    grid = (triton.cdiv(m, cfg.block_m), triton.cdiv(n, cfg.block_n))
    matrices = [(a[i], b[i], c[i]) for i in range(batch)]

    def launch() -> torch.Tensor:
        for ai, bi, ci in matrices:
            kernel[grid](ai, bi, ci, m, n, k, k, n, n, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
                         BLOCK_K=cfg.block_k, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        return c

    return launch


def programs(a: torch.Tensor, tiles: int) -> int:
    """min(#SMs, tiles): one persistent program per SM (INTERPRETER_PROGRAMS on a CPU)."""
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else INTERPRETER_PROGRAMS
    return max(1, min(sms, tiles))


def tiles(sizes: Mapping[str, int], cfg: TileConfig) -> int:
    """(batch, m, n) tiles of one call: what the baseline's 64 grids cover and persistent strides over."""
    return sizes["batch"] * -(-sizes["m"] // cfg.block_m) * -(-sizes["n"] // cfg.block_n)


def _persistent(cfg: TileConfig, variant: str) -> Callable[[Inputs], Callable[[], torch.Tensor]]:
    def factory(inputs: Inputs) -> Callable[[], torch.Tensor]:
        a, b = _check_operands(inputs, variant)
        (batch, m, k), n = a.shape, b.shape[2]
        c = torch.empty(batch, m, n, device=a.device, dtype=torch.float16)
        kernel = triton_helpers.jit(_persistent_kernel, triton_helpers.interpreting())
        grid = programs(a, tiles({"batch": batch, "m": m, "n": n}, cfg))

        def launch() -> torch.Tensor:
            kernel[(grid,)](a, b, c, batch, m, n, k, m * k, k, k * n, n, m * n, n,
                            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                            GROUP_M=cfg.group_m, PROGRAMS=grid, num_warps=cfg.num_warps,
                            num_stages=cfg.num_stages)
            return c

        launch.programs = grid
        return launch

    factory.__name__ = f"optimized_{variant}"
    factory.__doc__ = (f"One persistent launch striding over every (batch, m, n) tile: {cfg.block_m} x "
                       f"{cfg.block_n} x {cfg.block_k} tiles, GROUP_M {cfg.group_m}, {cfg.num_warps} warps, "
                       f"{cfg.num_stages} stages.")
    return factory


optimized_persistent = _persistent(BOOK, "persistent")
optimized_persistent_128 = _persistent(LATER_TUNE, "persistent_128")


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 batched product of the same fp16 operands (exact: integer data)."""
    return torch.bmm(inputs["a"].double(), inputs["b"].double())


def flops(sizes: Mapping[str, int]) -> int:
    """2 batch m n k."""
    return 2 * sizes["batch"] * sizes["m"] * sizes["n"] * sizes["k"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: A and B read once, C written once, fp16."""
    batch, m, n, k = sizes["batch"], sizes["m"], sizes["n"], sizes["k"]
    return 2 * batch * (m * k + k * n + m * n)


PAIR = KernelPair(
    name=NAME,
    chapter=14,
    lesson="64 Triton launches of 64 small programs each leave the GPU idle between launches; one "
           "persistent launch (a program per SM striding over all 4096 tiles) does the same tiles "
           "in one long-lived kernel: 64 -> 1 launches per call; a bigger tile then feeds wgmma.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "persistent": optimized_persistent,
              "persistent_128": optimized_persistent_128},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    size_rules=SIZE_RULES,
    tolerance=1e-6,      # integer data: every variant is exact (see docstring)
    timer="steady",      # the lesson is 64 launches -> 1 and the GPU idle between them: back to back
    requires=Requirements(min_cc=(9, 0), needs=("triton",), note="Hopper (sm_90) or newer"),
    book=Book("persistent", 6.088, "spec §3.3 triton_persistent",
              off_reason="the book's calls end in a host sync (float(out.sum())), most of its 0.13 ms; without "
                         "it the gain is 64 launches -> 1, which follows the host's launch rate"),
)
