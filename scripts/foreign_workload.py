"""A workload profiled the way users profile, for issue 16's fixtures (not by aisp-prof).

MODE=ncu: a handful of kernels with known FLOP mixes under NVTX ranges `foreign/<name>`:
an FP32 SIMT GEMM (TF32 off), an FP64 elementwise FMA, an FP16 elementwise multiply-add, an
FP32 elementwise add, so `--set full` (rates) and `.sum` captures of the same kernels compare.
MODE=nsys: nested NVTX ranges (step > forward > layerN) on two threads at once, and a CUDA
graph replayed three times inside `graph_replay`, for nsys's default `--cuda-graph-trace=graph`.
"""
import os
import threading

import nvtx
import torch

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"


def ncu_workload() -> None:
    g = torch.Generator(device=dev).manual_seed(0)
    a32 = torch.randn(1024, 1024, device=dev, generator=g)
    b32 = torch.randn(1024, 1024, device=dev, generator=g)
    x64 = torch.randn(1 << 20, device=dev, dtype=torch.float64, generator=g)
    x16 = torch.randn(1 << 22, device=dev, generator=g).half()
    torch.cuda.synchronize()
    with nvtx.annotate("foreign"):
        with nvtx.annotate("fp32_gemm"):
            torch.mm(a32, b32)
        with nvtx.annotate("fp64_fma"):
            torch.addcmul(x64, x64, x64)
        with nvtx.annotate("fp16_fma"):
            torch.addcmul(x16, x16, x16)
        with nvtx.annotate("fp32_add"):
            torch.add(a32, b32)
    torch.cuda.synchronize()


def layer_stack(name: str, x: torch.Tensor, steps: int = 2, layers: int = 3) -> None:
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for s in range(steps):
            with nvtx.annotate(f"step{s}"):
                with nvtx.annotate("forward"):
                    for i in range(layers):
                        with nvtx.annotate(f"layer{i}"):
                            x = torch.relu(x @ x.T / x.shape[0])
        stream.synchronize()


def nsys_workload() -> None:
    x = torch.randn(512, 512, device=dev)
    threads = [threading.Thread(target=layer_stack, name=f"worker{k}", args=(f"w{k}", x.clone()))
               for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    static = torch.randn(1 << 20, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):            # warm-up outside capture, as CUDA graphs need
        y = (static * 2).sin().sum()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = (static * 2).sin().sum()
    torch.cuda.synchronize()
    with nvtx.annotate("graph_replay"):
        for _ in range(3):
            graph.replay()
    torch.cuda.synchronize()
    float(y)


if __name__ == "__main__":
    (ncu_workload if os.environ.get("MODE", "ncu") == "ncu" else nsys_workload)()
