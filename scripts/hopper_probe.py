"""Device-side probes for the Hopper ports of chapter 9 (run by scripts/hopper_session.sh).

    python3 scripts/hopper_probe.py tma      ch09.tma_wgmma_pipeline: SASS mix, checks, timing vs cuBLAS
    python3 scripts/hopper_probe.py sdpa     which SDPA backends run here, their time and error
    python3 scripts/hopper_probe.py sparse   2:4 GEMM paths (cuSPARSELt alg search, layouts, fp8)

Each prints one line per measurement and writes $OUT/<probe>.json. Timing is
aisp_prof.collect.timing.time_variant (CUDA events, L2 flushed, median); correctness is
aisp_prof.collect.check.check_pair against the pair's float64 reference. Nothing here changes clocks.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
import traceback

import torch

from aisp_prof import pairs
from aisp_prof.collect import check
from aisp_prof.collect.timing import time_variant

OUT = os.environ.get("OUT", "/tmp/out")


def dump(name: str, data: dict) -> None:
    with open(os.path.join(OUT, f"{name}.json"), "w") as fh:
        json.dump(data, fh, indent=1, default=str)


def worst_errors(res) -> dict:
    worst: dict = {}
    for c in res.checks:
        w = worst.setdefault(c.variant, {"rel_err": 0.0, "passed": True, "message": ""})
        e = c.rel_err_vs_reference
        w["rel_err"] = None if e is None or w["rel_err"] is None else max(w["rel_err"], e)
        if not c.passed:
            w["passed"], w["message"] = False, c.message
    return worst


def run_check(pair, sizes, variants, trials, results) -> bool:
    t = time.time()
    key = ",".join(f"{k}={v}" for k, v in sizes.items())
    try:
        worst = worst_errors(check.check_pair(pair, sizes, device="cuda", variants=variants, trials=trials))
    except Exception as exc:  # noqa: BLE001 - a probe reports and goes on
        print(f"check {key}: ERROR {type(exc).__name__}: {exc}", flush=True)
        results["checks"][key] = {"error": f"{type(exc).__name__}: {exc}"}
        return False
    results["checks"][key] = worst
    bad = [v for v, w in worst.items() if not w["passed"]]
    errs = " ".join(f"{v}={w['rel_err']:.2e}" if w["rel_err"] is not None else f"{v}=None" for v, w in worst.items())
    print(f"check {key}: {'PASS' if not bad else 'FAIL ' + ','.join(bad)} ({time.time() - t:.1f}s) {errs}", flush=True)
    for v in bad:
        print(f"   {v}: {worst[v]['message']}", flush=True)
    return not bad


def timed(pair, variant, sizes, repeats, results, label=None) -> float:
    st = time_variant(pair, variant, sizes, repeats=repeats, warmup=5)
    ms = st["median_ns"] / 1e6
    tflops = pair.flops(sizes) / st["median_ns"] / 1e3
    results["timing"].setdefault(label or variant, []).append(
        {"median_ms": ms, "tflops": tflops, "rel_spread": st["rel_spread"], "min_ms": st["min_ns"] / 1e6})
    print(f"time {label or variant:16s} median {ms:9.3f} ms {tflops:7.1f} TFLOP/s spread {100 * st['rel_spread']:.2f}%",
          flush=True)
    return ms


def smi() -> str:
    q = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                              check=False, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


# --- ch09.tma_wgmma_pipeline -----------------------------------------------------------------

def sass_summary(so_path: str) -> dict:
    """Registers/smem and the SASS instruction mix of every kernel in the library (cuobjdump)."""
    out: dict = {}
    try:
        res = subprocess.run(["cuobjdump", "--dump-resource-usage", so_path], check=False, capture_output=True, text=True).stdout
        sass = subprocess.run(["cuobjdump", "-sass", so_path], check=False, capture_output=True, text=True).stdout
    except OSError as exc:
        return {"error": str(exc)}
    for fn, usage in re.findall(r"Function (\S+):\s*\n\s*(REG:.*)", res):
        out.setdefault(fn, {})["usage"] = usage.strip()
    for chunk in re.split(r"\n\s*Function : ", sass)[1:]:
        name = chunk.split("\n")[0].strip()
        ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+)", chunk)
        keys = ["HGMMA", "UTMALDG", "UTMACCTL", "SYNCS", "WARPGROUP", "USETMAXREG", "UCGABAR", "BAR", "LDL", "STL", "STG"]
        out.setdefault(name, {})["sass"] = {k: sum(1 for o in ops if o.startswith(k)) for k in keys}
    return out


def probe_tma() -> int:
    from aisp_kernels import build
    pair = pairs.find("ch09.tma_wgmma_pipeline")
    import importlib.util
    spec = importlib.util.spec_from_file_location("tma_probe", pair.source)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    results: dict = {"gpu": torch.cuda.get_device_name(0), "checks": {}, "timing": {}}
    t0 = time.time()
    so = build.build_shared_library(mod.CUDA_SOURCE, arch=mod.ARCH)
    print(f"built {so} in {time.time() - t0:.1f}s", flush=True)
    results["sass"] = sass_summary(str(so))
    for fn, info in results["sass"].items():
        print(f"  {fn[-60:]}: {info}", flush=True)
    variants = list(pair.variants)
    ok = True
    # one tile, a tile grid, edges in m/n/k, then the default size
    for sizes in ({"m": 128, "n": 256, "k": 64}, {"m": 256, "n": 512, "k": 512},
                  {"m": 300, "n": 264, "k": 200}, {"m": 1, "n": 8, "k": 8}, {"m": 136, "n": 8, "k": 8},
                  {"m": 1000, "n": 1032, "k": 520}):
        ok &= run_check(pair, sizes, variants, 1, results)
    if not ok:
        debug_tile(mod)
    ok &= run_check(pair, dict(pair.sizes), variants, 2, results)
    results["all_checks_passed"] = bool(ok)
    torch.cuda.empty_cache()
    sizes = dict(pair.sizes)
    if ok:
        fast = [v for v in variants if v not in ("baseline", "cublas")]
        for _ in range(3):    # interleaved: the clock drifts under sustained tensor load
            cb = timed(pair, "cublas", sizes, 50, results)
            for v in fast:
                ms = timed(pair, v, sizes, 50, results)
                print(f"   {v} = {100 * cb / ms:.1f}% of cuBLAS (same round)", flush=True)
        timed(pair, "baseline", sizes, 20, results)
        for shape in ({"m": 8192, "n": 8192, "k": 8192}, {"m": 4096, "n": 4096, "k": 4096},
                      {"m": 8192, "n": 8192, "k": 4096}):
            tag = f"{shape['m']}x{shape['n']}x{shape['k']}"
            cb = timed(pair, "cublas", shape, 30, results, label=f"cublas@{tag}")
            for v in fast:
                ms = timed(pair, v, shape, 30, results, label=f"{v}@{tag}")
                print(f"   {v} = {100 * cb / ms:.1f}% of cuBLAS at {tag}", flush=True)
    results["nvidia_smi"] = smi()
    print("nvidia-smi:", results["nvidia_smi"], flush=True)
    dump("tma", results)
    return 0 if ok else 1


def debug_tile(mod) -> None:
    """Where a one-tile product goes wrong: per 8x8 block of C, the max error (first 64x64)."""
    try:
        inputs = mod.make_inputs({"m": 128, "n": 256, "k": 64}, "cuda", 0)
        ref = mod.reference(inputs)
        for name in ("serial", "pipelined", "pipelined_cluster"):
            c = getattr(mod, name)(inputs)().double()
            torch.cuda.synchronize()
            err = (c - ref).abs()
            print(f"debug {name}: max err {err.max().item():.3g}, ref max {ref.abs().max().item():.3g}; "
                  f"rows with err>0.1: {(err.max(dim=1).values > 0.1).sum().item()}/128, "
                  f"cols: {(err.max(dim=0).values > 0.1).sum().item()}/256", flush=True)
            blocks = err[:64, :64].reshape(8, 8, 8, 8).amax(dim=(1, 3))
            for row in blocks.tolist():
                print("   " + " ".join(f"{x:5.2f}" for x in row), flush=True)
            # does C match A @ B^T with some permutation? compare against ref of row 0
            print(f"   c[0,:8]   {[round(x, 3) for x in c[0, :8].tolist()]}", flush=True)
            print(f"   ref[0,:8] {[round(x, 3) for x in ref[0, :8].tolist()]}", flush=True)
    except Exception:  # noqa: BLE001
        traceback.print_exc()


# --- ch09.sdpa_attention ---------------------------------------------------------------------

def probe_sdpa() -> int:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    pair = pairs.find("ch09.sdpa_attention")
    sizes = dict(pair.sizes)
    results: dict = {"gpu": torch.cuda.get_device_name(0), "checks": {}, "timing": {},
                     "cudnn": torch.backends.cudnn.version()}
    print("cudnn", torch.backends.cudnn.version(), flush=True)
    inputs = pair.make_inputs(sizes, "cuda", 0)

    def backend_variant(backend):
        def factory(inp):
            q, k, v = inp["q"], inp["k"], inp["v"]
            out = torch.empty_like(q)

            def launch():
                with sdpa_kernel(backend):
                    out.copy_(F.scaled_dot_product_attention(q, k, v))
                return out
            return launch
        factory.__name__ = str(backend)
        return factory

    extra = {"cudnn": backend_variant(SDPBackend.CUDNN_ATTENTION),
             "efficient": backend_variant(SDPBackend.EFFICIENT_ATTENTION)}
    full = dataclasses.replace(pair, variants={**pair.variants, **extra})
    for name in extra:
        try:
            full.variants[name](inputs)()
            torch.cuda.synchronize()
            print(f"{name}: runs", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(f"{name}: does not run: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
    del inputs
    torch.cuda.empty_cache()
    small = dict(sizes, batch=2, heads=4, seq=1024)
    run_check(full, small, list(full.variants), 1, results)
    run_check(full, sizes, list(full.variants), 1, results)
    for v in ("flash", "cudnn", "efficient", "baseline"):
        try:
            timed(full, v, sizes, 20, results)
        except Exception as exc:  # noqa: BLE001
            print(f"time {v}: ERROR {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    # kernel names under the profiler: which cuDNN kernel runs
    try:
        from torch.profiler import ProfilerActivity, profile
        inp = full.make_inputs(sizes, "cuda", 1)
        fn = full.variants["cudnn"](inp)
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
        results["cudnn_kernels"] = names
        print("cudnn kernels:", names, flush=True)
    except Exception as exc:  # noqa: BLE001
        print("profiler:", exc, flush=True)
    results["nvidia_smi"] = smi()
    dump("sdpa", results)
    return 0


# --- ch09.structured_sparsity ----------------------------------------------------------------

def probe_sparse() -> int:
    results: dict = {"gpu": torch.cuda.get_device_name(0), "checks": {}, "timing": {},
                     "cusparselt": torch.backends.cusparselt.version() if torch.backends.cusparselt.is_available() else None}
    print("cusparselt", results["cusparselt"], flush=True)

    for m, n, k in ((16384, 16384, 16384), (8192, 8192, 8192)):
        rows = sparse_rows(m, n, k, results)
        for name, ms in rows.items():
            print(f"sparse {m}x{n}x{k} {name:28s} {ms:8.3f} ms {2 * m * n * k / ms / 1e9:7.1f} TFLOP/s "
                  f"{rows['dense'] / ms:5.2f}x dense", flush=True)
        results["timing"][f"{m}x{n}x{k}"] = rows
        torch.cuda.empty_cache()
    results["nvidia_smi"] = smi()
    dump("sparse", results)
    return 0


def ev_time(fn, reps=20) -> float:
    """Median ms of fn over reps calls, L2 flushed before each."""
    fn()
    torch.cuda.synchronize()
    flush = torch.empty(128 << 20, dtype=torch.int8, device="cuda")
    ts = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def sparse_rows(m: int, n: int, k: int, results: dict) -> dict:
    """Median ms of the dense GEMM and of every 2:4 path that runs here, for one shape."""
    from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured
    gen = torch.Generator(device="cuda").manual_seed(0)
    w = pairs_prune(torch.randn(m, k, generator=gen, device="cuda") / k ** 0.5).to(torch.bfloat16)
    x = torch.randn(k, n, generator=gen, device="cuda").to(torch.bfloat16)
    xt = x.t().contiguous().t()            # column-major B
    rows = {"dense": ev_time(lambda: torch.mm(w, x))}
    ws = to_sparse_semi_structured(w)
    rows["sparse_default"] = ev_time(lambda: torch.mm(ws, x))
    try:
        rows["sparse_colmajor_x"] = ev_time(lambda: torch.mm(ws, xt))
    except Exception as exc:  # noqa: BLE001
        print("colmajor:", exc, flush=True)
    try:
        packed = torch._cslt_compress(w)
        alg = torch._cslt_sparse_mm_search(packed, x)
        results[f"alg_{m}"] = alg
        rows[f"cslt_alg{alg}"] = ev_time(lambda: torch._cslt_sparse_mm(packed, x, alg_id=alg))
        rows["cslt_alg0"] = ev_time(lambda: torch._cslt_sparse_mm(packed, x))
        rows[f"cslt_alg{alg}_colmajor"] = ev_time(lambda: torch._cslt_sparse_mm(packed, xt, alg_id=alg))
        rows["cslt_alg0_transpose_result"] = ev_time(lambda: torch._cslt_sparse_mm(packed, xt, transpose_result=True))
        ref = w.float() @ x.float()
        got = torch._cslt_sparse_mm(packed, x, alg_id=alg).float()
        results[f"cslt_rel_err_{m}"] = ((got - ref).norm() / ref.norm()).item()
    except Exception as exc:  # noqa: BLE001
        print("cslt:", type(exc).__name__, str(exc)[:300], flush=True)
    try:
        w8, x8 = w.to(torch.float8_e4m3fn), x.to(torch.float8_e4m3fn)
        p8 = torch._cslt_compress(w8)
        rows["cslt_fp8"] = ev_time(lambda: torch._cslt_sparse_mm(p8, x8, out_dtype=torch.bfloat16))
        one = torch.ones((), device="cuda")
        xt8 = x8.t().contiguous()
        rows["dense_fp8_scaled_mm"] = ev_time(lambda: torch._scaled_mm(w8, xt8.t(), one, one, out_dtype=torch.bfloat16))
    except Exception as exc:  # noqa: BLE001
        print("fp8:", type(exc).__name__, str(exc)[:300], flush=True)
    try:
        SparseSemiStructuredTensor._FORCE_CUTLASS = True
        wc = to_sparse_semi_structured(w)
        rows["cutlass_sparse"] = ev_time(lambda: torch.mm(wc, x))
    except Exception as exc:  # noqa: BLE001
        print("cutlass sparse:", type(exc).__name__, str(exc)[:300], flush=True)
    finally:
        SparseSemiStructuredTensor._FORCE_CUTLASS = False
    return rows


def pairs_prune(w: torch.Tensor) -> torch.Tensor:
    import importlib.util
    spec = importlib.util.spec_from_file_location("ss_probe", pairs.find("ch09.structured_sparsity").source)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.prune_2_4(w)


if __name__ == "__main__":
    probes = {"tma": probe_tma, "sdpa": probe_sdpa, "sparse": probe_sparse}
    sys.exit(probes[sys.argv[1]]())
