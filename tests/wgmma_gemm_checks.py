"""What the ch10 wgmma GEMM pairs' tests check alike on the CPU (matmul_wgmma_pipelined,
matmul_wgmma_vs_cublas, warp_specialization, cluster_pipeline): C = A B^T in fp16 with fp32
accumulation, A [m, k] and B [n, k] both K-major; their inputs, their float64 reference, and a
tolerance that a correct kernel meets and the typical kernel bugs miss by far."""
from __future__ import annotations


def assert_seeded_k_major_fp16(mod, sizes: dict) -> None:
    """`mod.make_inputs` at `sizes`: A [m, k] and B [n, k] (B is K-major), contiguous fp16, the same
    for the same seed and not for another; at k = 4096 the reference C ~ N(0, 1), far from fp16's
    range."""
    import torch

    a, b, c = (mod.make_inputs(sizes, "cpu", s) for s in (7, 7, 8))
    assert a["a"].shape == (sizes["m"], sizes["k"]) and a["b"].shape == (sizes["n"], sizes["k"])
    for key in ("a", "b"):
        assert a[key].dtype == torch.float16 and a[key].is_contiguous()
        assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
    big = mod.make_inputs({"m": 128, "n": 256, "k": 4096}, "cpu", 0)
    assert 0.9 < float(mod.reference(big).std()) < 1.1


def assert_reference_within_rounding(mod, sizes: dict):
    """The reference at `sizes` (seed 3) is float64 A @ B^T, and what a correct kernel can be off
    by (fp32 accumulation, then C rounded to fp16) lies between 5e-5 and a fifth of the tolerance.
    Gives (A, B, reference) for the test's own wrong-kernel checks."""
    import torch

    from aisp_prof.collect.correctness import check

    inputs = mod.make_inputs(sizes, "cpu", 3)
    a, b = inputs["a"], inputs["b"]
    ref = mod.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == (sizes["m"], sizes["n"])
    assert torch.equal(ref, a.double() @ b.double().t())
    rounded = (a.float() @ b.float().t()).half().double()
    assert 5e-5 < check._rel_err(rounded, ref) < mod.PAIR.tolerance / 5
    return a, b, ref


def assert_descriptor_bugs_are_caught(mod, a, b, ref) -> None:
    """What a wrong wgmma kernel is off by is O(1): one 16-wide k slice of A taken from the
    neighbouring slice (a wrong descriptor step), or B read as [k, n] instead of [n, k]."""
    from aisp_prof.collect.correctness import check

    wrong = a.clone()
    wrong[:, 16:32] = a[:, 32:48]
    assert check._rel_err(wrong.double() @ b.double().t(), ref) > 0.1
    square = mod.make_inputs({"m": 256, "n": 256, "k": 256}, "cpu", 3)
    assert check._rel_err(square["a"].double() @ square["b"].double(), mod.reference(square)) > 0.5
