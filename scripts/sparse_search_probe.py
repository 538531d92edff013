import itertools, time, torch, warnings
warnings.simplefilter("ignore")
from aisp_prof import pairs
import importlib.util
p = pairs.find("ch09.structured_sparsity")
spec = importlib.util.spec_from_file_location("ss", p.source); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
def ev(fn, reps=10):
    fn(); torch.cuda.synchronize()
    fl = torch.empty(128 << 20, dtype=torch.int8, device="cuda"); ts = []
    for _ in range(reps):
        fl.zero_(); s, e = torch.cuda.Event(True), torch.cuda.Event(True); s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]
n = 16384
inp = m.make_inputs({"m": n, "n": n, "k": n}, "cuda", 0)
w, x = inp["w"], inp["x"]
xt = x.t().contiguous().t()
flop = 2 * n**3
print("dense", ev(lambda: torch.mm(w, x)))
packed = torch._cslt_compress(w)
print("has new search:", hasattr(torch._C, "_cusparselt") and hasattr(torch._C._cusparselt, "mm_search"))
try:
    r = torch._C._cusparselt.mm_search(packed, x, None, None, None, False)
    print("mm_search(row-major B) ->", r)
except Exception as e:
    print("mm_search err", type(e).__name__, str(e)[:200])
try:
    r2 = torch._C._cusparselt.mm_search(packed, xt, None, None, None, False)
    print("mm_search(col-major B) ->", r2)
except Exception as e:
    print("mm_search colmajor err", type(e).__name__, str(e)[:200])
alg_old = torch._cslt_sparse_mm_search(packed, x)
print("old search alg", alg_old)
res = {}
for alg in range(0, 8):
    for sk in (1, 2, 3, 4):
        try:
            ms = ev(lambda: torch._cslt_sparse_mm(packed, x, alg_id=alg, split_k=sk), reps=5)
            res[(alg, sk)] = ms
        except Exception as e:
            if sk == 1: print("alg", alg, "fails:", str(e)[:100]); 
            break
for (alg, sk), ms in sorted(res.items(), key=lambda t: t[1])[:8]:
    print(f"alg {alg} split_k {sk}: {ms:.3f} ms {flop/ms/1e9:.0f} TFLOP/s")
try:
    alg_c = torch._cslt_sparse_mm_search(packed, xt)
    print("colmajor search alg", alg_c, ev(lambda: torch._cslt_sparse_mm(packed, xt, alg_id=alg_c)))
except Exception as e:
    print("colmajor", e)
print(__import__("subprocess").run(["nvidia-smi","--query-gpu=clocks.sm,power.draw,clocks_event_reasons.active","--format=csv,noheader"],capture_output=True,text=True).stdout)
