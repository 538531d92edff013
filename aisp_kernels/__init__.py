"""Helpers that the kernel pairs in kernels/chNN import: the nvcc build and ctypes binding of
their CUDA C++ sources, GEMM arithmetic, 2:4 sparsity, Triton and torch settings.

torch and triton are allowed here (the pairs need them anyway). Nothing in aisp_prof's analysis
core imports this package, which is what lets `aisp_prof` import without torch; tool discovery
(nvcc, CUTLASS headers) stays in aisp_prof.tools for the same reason.
"""
