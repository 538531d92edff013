"""Chapter 14: one CUDA C kernel compiled at run time by NVRTC, through NVIDIA's cuda-python.

The operation, per row of x [batch, seq, hidden] fp16 (LayerNorm over hidden, eps 1e-5, exact
erf GELU, a [batch, seq] keep-mask, residual):

    y = (mask ? GELU(LayerNorm(x) * weight + bias) : 0) + x

What the book's code really does (`ch14/{baseline,optimized}_cuda_python.py`, 64 x 2048 x 4096
fp16 = 1 GiB, weight = 1, bias = 0, mask = rand > 0.3, 100 timed calls): the baseline is
F.layer_norm, F.gelu, masked_fill_(~mask) and + input: 4 kernels over 1 GiB each, plus the ~mask
kernel every call. The optimized side compiles a CUDA C string with NVRTC through
`cuda.bindings.nvrtc` (`--gpu-architecture=sm_<detected>`, `--use_fast_math`, `-I$CUDA_HOME/
include` for cuda_fp16.h), loads the PTX with cuModuleLoadData (the driver JITs it) and launches
it with cuLaunchKernel on the legacy default stream (0), not torch's stream: one block of 256
threads per row, scalar 2-byte loads, the variance as E[x^2] - mean^2, the row read twice, and
the *tanh* GELU approximation where the baseline uses erf (the two differ by up to ~1e-3 and pass
the book's allclose(1e-3, 1e-3) only because it is loose). The docstring's "cuda.core" API is
imported but never used.

This port keeps the sizes, the inputs and the four baseline ops (the ~mask is computed once in
the factory, so the baseline is 4 kernels per call), and writes its own kernel
(`cuda_python.cu`, read when a factory runs):
  - the same math as the baseline (erf GELU, two-pass variance), no --use_fast_math: the kernel
    is memory-bound, so exact math costs nothing (fast math would change only division, sqrt and
    the flush of fp32 denormals here; erff has no fast variant);
  - one block per row, the row kept in registers: x read once (16-byte LDG.128), y written once
    (STG.128), warp-shuffle reductions; a dropped row is copied through unchanged;
  - the sizes are NVRTC macros (-DHIDDEN, -DVEC, -DTHREADS, -DITEMS), so each shape gets its own
    unrolled kernel: the point of compiling at run time; ragged rows fall back to 8/4/2-byte
    loads; --gpu-architecture=sm_<major><minor> from torch.cuda.get_device_capability, and the
    CUBIN (SASS) comes from NVRTC directly, so the driver has no PTX to JIT;
  - it launches on torch's current stream. No header: fp16 <-> fp32 by cvt instructions.
Variants:
  baseline  the book's 4 eager kernels.
  nvrtc     the fused kernel, compiled and loaded in the factory (NVRTC ~0.3-1 s);
            `launch.cubin`, `launch.nvrtc_options`, `launch.launch_shape` and
            `launch.compile_seconds` are there for the tool (cuobjdump -sass launch.cubin).
            RequirementError when `cuda.bindings` is missing (pip install cuda-python) or
            libnvrtc is not found (pip install nvidia-cuda-nvrtc).
  inductor  the baseline's four ops under torch.compile(fullgraph=True, dynamic=False, default
            mode): what the compiler makes of the same chain (one Triton kernel, fp32 inside);
            compiled and warmed in the factory, `launch.compiled` and friends as in the other
            ch14 pairs.

Predicted profile (what must move in ncu / nsys):
  - kernels per call: 4 (vectorized_layer_norm, GELU, masked_fill, add) -> 1;
  - DRAM bytes: the baseline makes 9 passes of 1.07 GB (layer_norm reads x and writes n; GELU
    reads and writes; masked_fill_ reads and writes; add reads two and writes one): ~9.7 GB;
    the fused kernel reads x and writes y once: ~2.15 GB, 4.5x fewer;
  - all three are DRAM-bound (~2.5-4 FLOP/byte against a ridge of ~20 for fp32 CUDA cores):
    expect ~85-90% of DRAM bandwidth in ncu's dram__throughput for the fused kernel;
  - SASS: the fused kernel loads with LDG.E.128.CONSTANT and stores with STG.E.128, reduces with
    SHFL.BFLY, has no local memory (the CPU test reads this from the CUBIN);
  - duration on an H100 (~3.35 TB/s): baseline ~3.3 ms, nvrtc ~0.7 ms: ~4.5x; inductor close to
    nvrtc. The book's B200 ratio is 2.184x (its kernel reads x twice with 2-byte loads).

FLOPs: 15 per element, as the book counts (LayerNorm 5, GELU ~10; erf is a polynomial, counted
as a few). Minimum DRAM bytes: x read and y written (fp16), the mask, weight and bias once.

Correctness: x ~ N(0, 1), weight = 1, bias = 0, mask = U(0, 1) > 0.3 (the book's inputs); the
tests also run random weight and bias. The reference is float64 from the same fp16 inputs, one
batch entry at a time. Measured on a CPU (fp16 eager, and the kernel's fp32 math emulated, at
2 x 45 x 1000 and 2 x 256 x 4096, with and without random weight and bias): the baseline rounds n,
GELU(n) and the sum to fp16, 2.5e-4 relative to the reference; the fused math rounds once, 1.9e-4;
the book's tanh GELU in fp32 would be 2.0e-4. Tolerance 1e-3 is 4x the baseline and rejects a mask
applied the wrong way (0.47), a missing residual (0.72) or a dropped bias of std 0.1 (0.04).
The sanitizer size (small_sizes) is 2 x 45 x 1000 (125 16-byte vectors per
row on 128 threads: the ragged tail is masked).
"""
from __future__ import annotations

import ctypes
import math
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import torch
import torch.nn.functional as F

from aisp_prof.errors import BuildError, RequirementError
from aisp_prof.pairs import Book, Inputs, KernelPair, Requirements

NAME = "ch14.cuda_python"
DEFAULT_SIZES = {"batch": 64, "seq": 2048, "hidden": 4096}
SMALL_SIZES = {"batch": 2, "seq": 45, "hidden": 1000}
EPS = 1e-5
KEEP_PROBABILITY = 0.7           # mask = rand > 0.3
SOURCE = Path(__file__).with_name("cuda_python.cu")
KERNEL = "fused_layernorm_gelu_mask"
MAX_THREADS = 256
MAX_ITEMS = 16                   # 16-byte loads per thread kept in registers
COMPILE_OPTIONS = {"fullgraph": True, "dynamic": False}


def launch_shape(hidden: int, alignment: int = 16) -> tuple[int, int, int]:
    """(VEC, THREADS, ITEMS) for rows of `hidden` fp16 values whose pointers are `alignment`-byte
    aligned: the widest load that divides both, a warp multiple of threads up to 256, and the
    loads per thread; ValueError when a row would not fit in registers."""
    if hidden < 1:
        raise ValueError(f"hidden must be >= 1, got {hidden}")
    vec = next(v for v in (8, 4, 2, 1) if hidden % v == 0 and alignment % (2 * v) == 0)
    vectors = hidden // vec
    threads = min(MAX_THREADS, 32 * math.ceil(vectors / 32))
    items = math.ceil(vectors / threads)
    if items > MAX_ITEMS:
        raise ValueError(f"hidden {hidden} needs {items} loads of {vec} values per thread; at most "
                         f"{MAX_ITEMS} (hidden <= {MAX_ITEMS * MAX_THREADS * vec} at this alignment, "
                         f"<= {MAX_ITEMS * MAX_THREADS * 8} when hidden is a multiple of 8)")
    return vec, threads, items


def make_inputs(sizes: Mapping[str, int], device: str, seed: int) -> Inputs:
    """x ~ N(0, 1) fp16 [batch, seq, hidden], weight = 1, bias = 0, mask = rand > 0.3 [batch, seq]."""
    batch, seq, hidden = sizes["batch"], sizes["seq"], sizes["hidden"]
    if batch < 1 or seq < 1:
        raise ValueError(f"batch and seq must be >= 1, got {dict(sizes)}")
    launch_shape(hidden)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(batch, seq, hidden, generator=gen, device=device, dtype=torch.float32).to(torch.float16)
    mask = torch.rand(batch, seq, generator=gen, device=device) > 1 - KEEP_PROBABILITY
    return {"x": x, "weight": torch.ones(hidden, device=device, dtype=torch.float16),
            "bias": torch.zeros(hidden, device=device, dtype=torch.float16), "mask": mask}


def baseline(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The book's eager chain: layer_norm, gelu, masked_fill_, add (4 kernels, 1 GiB each)."""
    x, weight, bias = inputs["x"], inputs["weight"], inputs["bias"]
    dropped = ~inputs["mask"].unsqueeze(-1)
    out = torch.empty_like(x)

    def launch() -> torch.Tensor:
        activated = F.gelu(F.layer_norm(x, (x.shape[-1],), weight, bias, EPS))
        activated.masked_fill_(dropped, 0.0)
        torch.add(activated, x, out=out)
        return out

    return launch


def _chain_into(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, dropped: torch.Tensor,
                out: torch.Tensor) -> None:
    """The baseline's four ops as one function of whole tensors (what `inductor` compiles)."""
    activated = F.gelu(F.layer_norm(x, (x.shape[-1],), weight, bias, EPS)).masked_fill(dropped, 0.0)
    out.copy_(activated + x)


def optimized_inductor(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The same chain compiled by Inductor (compiled and warmed here, 2 calls)."""
    x = inputs["x"]
    if not x.is_cuda:
        raise RequirementError(f"{NAME} inductor needs CUDA tensors: Inductor generates Triton kernels")
    args = (x, inputs["weight"], inputs["bias"], ~inputs["mask"].unsqueeze(-1), torch.empty_like(x))
    compiled = torch.compile(_chain_into, **COMPILE_OPTIONS)

    def launch() -> torch.Tensor:
        compiled(*args)
        return args[-1]

    start = time.perf_counter()
    launch()
    launch()
    torch.cuda.synchronize(x.device)
    launch.compile_seconds = time.perf_counter() - start
    launch.compiled, launch.compile_options, launch.example_args = compiled, dict(COMPILE_OPTIONS), (args,)
    return launch


# --- NVRTC + the driver API through cuda-python ----------------------------------------------

def _bindings() -> tuple[Any, Any]:
    """cuda.bindings' nvrtc and driver modules, or RequirementError saying what to install."""
    try:
        from cuda.bindings import driver, nvrtc
    except ImportError as exc:
        raise RequirementError(f"{NAME} nvrtc needs NVIDIA's cuda-python bindings (cuda.bindings.nvrtc "
                               f"and cuda.bindings.driver): pip install cuda-python ({exc})") from exc
    try:
        nvrtc.nvrtcVersion()
    except Exception as exc:  # cuda.pathfinder raises its own error when libnvrtc.so is not found
        raise RequirementError(f"{NAME} nvrtc needs the NVRTC library, which cuda-python loads at run "
                               f"time: pip install nvidia-cuda-nvrtc ({exc})") from exc
    return nvrtc, driver


def _nvrtc_log(nvrtc: Any, prog: Any) -> str:
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    return log.rstrip(b"\0 ").decode(errors="replace")


def nvrtc_options(hidden: int, arch: str, alignment: int = 16) -> list[str]:
    """The NVRTC command line for rows of `hidden` values on `arch` ("sm_90"): no fast math."""
    vec, threads, items = launch_shape(hidden, alignment)
    return [f"--gpu-architecture={arch}", "--std=c++17", "-lineinfo",
            f"-DHIDDEN={hidden}", f"-DVEC={vec}", f"-DTHREADS={threads}", f"-DITEMS={items}"]


def compile_cubin(options: list[str]) -> bytes:
    """NVRTC-compile cuda_python.cu with `options` into a CUBIN (needs no GPU, only libnvrtc);
    BuildError with NVRTC's log when it does not compile."""
    nvrtc, _ = _bindings()
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(SOURCE.read_bytes(), str(SOURCE).encode(), 0, [], [])
    if err != ok:
        raise BuildError(f"nvrtcCreateProgram failed: {err}")
    try:
        encoded = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        if err != ok:
            raise BuildError(f"NVRTC could not compile {SOURCE.name} ({' '.join(options)}):\n{_nvrtc_log(nvrtc, prog)}")
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        if err != ok or nvrtc.nvrtcGetCUBIN(prog, cubin)[0] != ok:
            raise BuildError(f"NVRTC gave no CUBIN for {' '.join(options)} (a virtual compute_XX arch?)")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return cubin


def _driver_call(driver: Any, result: tuple, what: str) -> Any:
    """The values after the CUresult of a cuda.bindings driver call; RuntimeError unless it succeeded."""
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorString(err)
        raise RuntimeError(f"{what} failed: {text.decode() if text else err} ({err})")
    return values[0] if len(values) == 1 else tuple(values)


def _alignment(*tensors: torch.Tensor) -> int:
    """The largest power of two up to 16 that divides every tensor's address."""
    return min(16, *(t.data_ptr() & -t.data_ptr() if t.data_ptr() else 16 for t in tensors))


def optimized_nvrtc(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """The fused kernel: NVRTC-compiled for this GPU and this row length, launched with cuLaunchKernel."""
    x, weight, bias, mask = inputs["x"], inputs["weight"], inputs["bias"], inputs["mask"]
    if not x.is_cuda:
        raise RequirementError(f"{NAME} nvrtc needs CUDA tensors (it launches a CUDA kernel)")
    _, driver = _bindings()
    out = torch.empty_like(x)
    keep = mask.contiguous().view(torch.uint8)
    hidden, rows = x.shape[-1], x.numel() // x.shape[-1]
    alignment = _alignment(x, weight, bias, out)
    major, minor = torch.cuda.get_device_capability(x.device)

    start = time.perf_counter()
    options = nvrtc_options(hidden, f"sm_{major}{minor}", alignment)
    cubin = compile_cubin(options)
    with torch.cuda.device(x.device):
        _driver_call(driver, driver.cuInit(0), "cuInit")
        if int(_driver_call(driver, driver.cuCtxGetCurrent(), "cuCtxGetCurrent")) == 0:
            device = _driver_call(driver, driver.cuDeviceGet(x.device.index or 0), "cuDeviceGet")
            context = _driver_call(driver, driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
            _driver_call(driver, driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        module = _driver_call(driver, driver.cuModuleLoadData(cubin), "cuModuleLoadData")
        kernel = _driver_call(driver, driver.cuModuleGetFunction(module, KERNEL.encode()), "cuModuleGetFunction")
    compile_seconds = time.perf_counter() - start

    # cuLaunchKernel copies each parameter from the address in this array: built once
    params = [ctypes.c_void_p(t.data_ptr()) for t in (x, weight, bias, keep, out)] + [ctypes.c_float(EPS)]
    param_array = (ctypes.c_void_p * len(params))(*(ctypes.addressof(p) for p in params))
    _, threads, _ = launch_shape(hidden, alignment)

    def launch() -> torch.Tensor:
        stream = driver.CUstream(torch.cuda.current_stream(x.device).cuda_stream)
        _driver_call(driver, driver.cuLaunchKernel(kernel, rows, 1, 1, threads, 1, 1, 0, stream,
                                                   ctypes.addressof(param_array), 0), "cuLaunchKernel")
        return out

    launch.cubin, launch.nvrtc_options, launch.kernel_name = cubin, options, KERNEL
    launch.launch_shape = {"grid": (rows, 1, 1), "block": (threads, 1, 1)}
    launch.compile_seconds = compile_seconds
    launch._keep_alive = (module, params, param_array, keep)
    return launch


def reference(inputs: Inputs) -> torch.Tensor:
    """float64 LayerNorm -> erf GELU -> mask -> + x from the same fp16 inputs, one batch entry at a time."""
    x, mask = inputs["x"], inputs["mask"]
    weight, bias = inputs["weight"].double(), inputs["bias"].double()
    out = torch.empty(x.shape, device=x.device, dtype=torch.float64)
    for i in range(x.shape[0]):
        xi = x[i].double()
        g = F.gelu(F.layer_norm(xi, (x.shape[-1],), weight, bias, EPS))
        out[i] = torch.where(mask[i].unsqueeze(-1), g, 0.0) + xi
    return out


def flops(sizes: Mapping[str, int]) -> int:
    """15 per element, as the book counts (LayerNorm 5, GELU ~10)."""
    return 15 * sizes["batch"] * sizes["seq"] * sizes["hidden"]


def bytes(sizes: Mapping[str, int]) -> int:  # noqa: A001 - the KernelPair field is called bytes
    """Minimum DRAM bytes: x read and y written once (fp16), the mask, weight and bias once."""
    rows, hidden = sizes["batch"] * sizes["seq"], sizes["hidden"]
    return 4 * rows * hidden + rows + 4 * hidden


def baseline_bytes(sizes: Mapping[str, int]) -> int:
    """What the four eager kernels move: 9 passes of 2 B per element (+ the mask and weights)."""
    rows, hidden = sizes["batch"] * sizes["seq"], sizes["hidden"]
    return 18 * rows * hidden + rows + 4 * hidden


PAIR = KernelPair(
    name=NAME,
    chapter=14,
    lesson="LayerNorm, GELU, mask and residual as four eager kernels pass 1 GiB through DRAM nine "
           "times; one CUDA C kernel compiled at run time by NVRTC (through cuda-python) reads x "
           "once and writes y once: ~4.5x fewer bytes, 4 launches -> 1.",
    make_inputs=make_inputs,
    variants={"baseline": baseline, "nvrtc": optimized_nvrtc, "inductor": optimized_inductor},
    reference=reference,
    flops=flops,
    bytes=bytes,
    sizes=DEFAULT_SIZES,
    small_sizes=SMALL_SIZES,
    tolerance=1e-3,      # fp16 roundings of the eager chain: 2.5e-4 (see docstring)
    requires=Requirements(min_cc=(9, 0), note="Hopper (sm_90) or newer; the nvrtc variant needs cuda-python"),
    variant_needs={"nvrtc": ("gpu",), "inductor": ("gpu", "triton")},
    book=Book("nvrtc", 2.184, "spec §3.3 cuda_python",
              off_reason="the book's fused kernel reads x twice with 2-byte loads; this one reads x once and "
                         "writes y once with 16-byte accesses, ~4.5x fewer bytes than the eager chain"),
)
