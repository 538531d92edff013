"""Exploration only (not shipped): time variants of warp_specialization.cu built with text patches."""
import ctypes, os, subprocess, sys, re
from pathlib import Path
import torch

SRC = Path("kernels/ch10/warp_specialization.cu").read_text()
PATCHES = {
    "shipped": [],
}
extra = os.environ.get("EXP_PATCHES")
if extra:
    PATCHES.update(eval(Path(extra).read_text()))

def build(name, patches):
    s = Path(patches[0][1]).read_text() if patches and patches[0][0] == "FILE" else SRC
    patches = [x for x in patches if x[0] != "FILE"]
    for a, b in patches:
        assert a in s, (name, a[:60])
        s = s.replace(a, b)
    d = Path("/tmp/exp"); d.mkdir(exist_ok=True)
    cu = Path("kernels/ch10") / f".exp_{name}.cu"
    cu.write_text(s)
    so = d / f"{name}.so"
    r = subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-shared",
                        "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-o", str(so), str(cu)], capture_output=True, text=True)
    cu.unlink()
    if r.returncode:
        print(name, "BUILD FAILED", r.stderr[-2000:]); return None
    regs = re.findall(r"Used (\d+) registers", r.stderr)
    lib = ctypes.CDLL(str(so))
    f = lib.aisp_warp_specialization
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    f.restype = ctypes.c_int
    return f

def timeit(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]

torch.manual_seed(0)
VARIANTS = [int(x) for x in os.environ.get("EXP_VARIANTS", "1 2 3").split()]
print(torch.cuda.get_device_name(), flush=True)
libs = {n: build(n, p) for n, p in PATCHES.items()}
for (m, n, k) in [(2056, 2056, 200), (1000, 1032, 72), (136, 8, 8)]:
    a = torch.randn(m, k, device="cuda", dtype=torch.float16) / k ** 0.5
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    ref = (a.double() @ b.double().t())
    s = torch.cuda.current_stream().cuda_stream
    for name, f in libs.items():
        for v in (VARIANTS if name != "old" else [1]):
            c = torch.full((m, n), 7.0, device="cuda", dtype=torch.float16)
            rc = f(v, a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, s); torch.cuda.synchronize()
            err = ((c.double() - ref).norm() / ref.norm()).item()
            print(f"check {m}x{n}x{k} {name} v{v} rc={rc} relerr={err:.2e} {'OK' if err < 2e-3 else 'FAIL'}", flush=True)
for (m, n, k) in [(16384, 16384, 2048), (16384, 16384, 8192)][:int(os.environ.get("EXP_NSIZES", "2"))]:
    a = torch.randn(m, k, device="cuda", dtype=torch.float16) / k ** 0.5
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    ref = torch.mm(a, b.t())
    t_cublas = timeit(lambda: torch.mm(a, b.t(), out=c))
    print(f"k={k} cublas {t_cublas:.4f} ms", flush=True)
    s = torch.cuda.current_stream().cuda_stream
    for name, f in libs.items():
        if f is None: continue
        for v in (VARIANTS if name != "old" else [1]):
            c.zero_()
            rc = f(v, a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, s); torch.cuda.synchronize()
            err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
            t = timeit(lambda: f(v, a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, s))
            print(f"k={k} {name:12s} v{v} rc={rc} {t:.4f} ms  {t_cublas / t:.3f} of cublas  relerr={err:.2e}", flush=True)
