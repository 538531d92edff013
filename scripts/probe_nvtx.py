"""Device probe: launches distinct kernels under nested, flat and domain NVTX ranges and a CUDA graph.

Used once to learn how ncu's --nvtx-include matches nested push/pop ranges and how nsys
records graph-launched kernels; kept so the fixtures made from it can be re-made.
"""
import torch
import nvtx

x = torch.randn(1 << 22, device="cuda")
torch.cuda.synchronize()
# nested push/pop ranges: aisp > pairA > {baseline, optimized}
nvtx.push_range("aisp")
nvtx.push_range("pairA")
nvtx.push_range("baseline")
torch.sqrt(x.abs())
nvtx.pop_range()
nvtx.push_range("optimized")
torch.exp(x)
nvtx.pop_range()
nvtx.pop_range()
nvtx.pop_range()
# one flat range whose name carries slashes
nvtx.push_range("aisp/pairB/baseline")
torch.sin(x)
nvtx.pop_range()
# a range in a named domain
dom = nvtx.get_domain("aisp")
dom.push_range(dom.get_event_attributes(message="pairC/baseline"))
torch.cos(x)
dom.pop_range()
# kernels launched from a CUDA graph, replayed inside a nested range
s = torch.cuda.Stream()
y = torch.empty_like(x)
with torch.cuda.stream(s):
    torch.tanh(x, out=y)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    torch.tanh(x, out=y)
    torch.sigmoid(y, out=y)
torch.cuda.synchronize()
nvtx.push_range("aisp")
nvtx.push_range("pairG")
nvtx.push_range("graph")
g.replay()
nvtx.pop_range()
nvtx.pop_range()
nvtx.pop_range()
torch.cuda.synchronize()
print("probe done")
