"""Calibration: hardware keys, turning a probe report into ceilings, storing and finding them.

The measured record is real (tests/fixtures/h200/calibration_h200.json: `aisp-prof calibrate` on an
H200, 2026-11-26); timing on a GPU is the `gpu`-marked test at the end.
"""
from __future__ import annotations

import json
import shutil

import pytest
from repo_paths import FIXTURES, ROOT
from click.testing import CliRunner

from aisp_prof.naming import hardware_key
from aisp_prof.calibrate.probes import BY_NAME, SPECS
from aisp_prof.calibrate.run import calibration_from_report
from aisp_prof.analyze.calibration import find_calibration
from aisp_prof.store.calibrations import save_calibration, stored_calibrations
from aisp_prof.cli import cli

H200 = FIXTURES / "h200"


@pytest.mark.parametrize("name,key", [
    ("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100_80gb_hbm3"), ("NVIDIA H100 PCIe", "h100_pcie"),
    (" NVIDIA GeForce RTX 4090 ", "geforce_rtx_4090"), (None, "unknown"), ("", "unknown"),
])
def test_hardware_key(name, key):
    assert hardware_key(name) == key


def test_the_committed_h200_calibration():
    cal = json.loads((H200 / "calibration_h200.json").read_text())
    assert cal == json.loads((ROOT / "profiles" / "calibration" / "h200.json").read_text())
    assert cal["hardware_key"] == "h200" and cal["gpu_name"] == "NVIDIA H200"
    assert cal["driver_version"] == "580.159.04" and cal["torch_version"] == "2.11.0+cu130"
    p = cal["probes"]
    # exact analytic work, and rate = work / median
    assert p["gemm_bf16"]["flops"] == 2 * 8192 ** 3 and p["gemm_fp64"]["flops"] == 2 * 4096 ** 3
    assert p["gemm_bf16"]["rate"] == pytest.approx(p["gemm_bf16"]["flops"] / (p["gemm_bf16"]["median_ns"] * 1e-9))
    assert p["copy_dram"]["bytes"] == 2 * 16 * p["copy_dram"]["shape"]["float4"]
    # the DRAM ceiling is the faster of the two copies (cudaMemcpy 4.26 TB/s, kernel 3.89)
    c = cal["ceilings"]
    assert c["dram_bytes_per_s"] == max(p["copy_dram"]["rate"], p["copy_dram_memcpy"]["rate"])
    assert 4.0e12 < c["dram_bytes_per_s"] < 4.81e12                    # under the 4.81 TB/s theoretical
    assert 7.5e14 < c["flops_per_s"]["tensor_bf16"] < 9.6e14            # dense bf16 roof at 1.78-1.98 GHz: 0.96-1.07 P
    assert c["flops_per_s"]["tensor_fp8"] > 1.9 * c["flops_per_s"]["tensor_bf16"] * 0.9
    assert "tensor_int8" not in c["flops_per_s"]                        # the sm80 WMMA kernel is no ceiling
    assert p["gemm_int8"]["ceiling"] is None and "WMMA" in p["gemm_int8"]["note"]
    assert all(p[n]["spread_pct"] >= 0 for n in p)


def test_the_committed_h100_calibration():
    cal = json.loads((ROOT / "profiles" / "calibration" / "h100_80gb_hbm3.json").read_text())
    assert cal["hardware_key"] == "h100_80gb_hbm3" and cal["sm_count"] == 132
    assert 2.8e12 < cal["ceilings"]["dram_bytes_per_s"] < 3.35e12      # theoretical 1280 B x 2.62 GHz


def _report(**probes):
    return {"env": {"gpu_name": "NVIDIA H200", "sm_count": 132, "gpu_memory_bytes": 150109880320,
                    "torch_version": "2.11.0+cu130"}, "probes": probes}


def _timed(median_ns: float, **work):
    return {"ok": True, **work, "timing": {"median_ns": median_ns, "min_ns": median_ns * 0.99, "max_ns": median_ns * 1.2,
                                           "p10_ns": median_ns * 0.995, "p90_ns": median_ns * 1.01, "repeats": 30}}


def test_calibration_from_report_is_pure():
    rep = _report(copy_dram=_timed(5e5, flops=0, bytes=2_000_000_000),
                  fma_fp32=_timed(1e6, flops=60_000_000_000, bytes=0),
                  gemm_int8=_timed(1e6, flops=10 ** 14, bytes=0),
                  gemm_fp8={"ok": False, "error": "RuntimeError: no fp8 here"})
    cal = calibration_from_report(rep, {"gpu_name": "NVIDIA H200", "driver_version": "580"}, "abc")
    assert cal["hardware_key"] == "h200" and cal["git_sha"] == "abc"
    assert cal["ceilings"] == {"flops_per_s": {"fp32": pytest.approx(6e13)}, "dram_bytes_per_s": pytest.approx(4e12)}
    assert cal["probes"]["gemm_fp8"] == {"ok": False, "error": "RuntimeError: no fp8 here"}
    assert cal["probes"]["copy_dram"]["spread_pct"] == pytest.approx(1.5)
    assert cal["probes"]["gemm_int8"]["ceiling"] is None


def load_calibration(db, key=None, sm_count=None, gpu_memory_bytes=None, dirs=None):
    """The store reads every calibration; analysis chooses the one that fits."""
    return find_calibration(stored_calibrations(db, dirs), key, sm_count, gpu_memory_bytes)


def test_store_db_first_then_files_then_signature(tmp_path):
    db = tmp_path / "a.db"
    files = tmp_path / "cal"
    files.mkdir()
    shutil.copy(H200 / "calibration_h200.json", files / "h200.json")
    found = load_calibration(db, "h200", dirs=[files])
    assert found and found[1] == f"file:{files / 'h200.json'}"
    assert load_calibration(db, "h100_80gb_hbm3", dirs=[files]) is None
    cal = json.loads((H200 / "calibration_h200.json").read_text())
    cal["ceilings"]["dram_bytes_per_s"] = 1.0
    assert save_calibration(db, cal) == "h200"
    cal2, source = load_calibration(db, "h200", dirs=[files])
    assert source == "db" and cal2["ceilings"]["dram_bytes_per_s"] == 1.0
    save_calibration(db, cal)                                             # upsert, one row per key
    assert [c["hardware_key"] for c in stored_calibrations(db, dirs=[files])] == ["h200"]
    # an imported profile has no GPU name: matched by SM count and memory size
    assert load_calibration(db, None, 132, 150109880320, dirs=[files])[0]["hardware_key"] == "h200"
    assert load_calibration(db, None, 132, 85899345920, dirs=[files]) is None


def test_show_needs_no_gpu(tmp_path, monkeypatch):
    """No database yet and no --db: the shipped files (a --db named on purpose and missing is exit 13,
    tests/unit/test_cli_contract.py)."""
    monkeypatch.setenv("AISP_PROF_DB", str(tmp_path / "a.db"))
    res = CliRunner().invoke(cli, ["calibrate", "--show"])
    assert res.exit_code == 0, res.output
    assert "h200: NVIDIA H200" in res.stdout and "gemm_bf16" in res.stdout and "TFLOP/s" in res.stdout
    res = CliRunner().invoke(cli, ["calibrate", "--show", "--json"])
    keys = {c["hardware_key"] for c in json.loads(res.stdout)}
    assert {"h200", "h100_80gb_hbm3"} <= keys


def test_probe_specs_are_plain_data():
    assert len(BY_NAME) == len(SPECS)
    for s in SPECS:
        assert s.ceiling in ("dram_bytes_per_s", "l2_bytes_per_s", "l1_bytes_per_s", "flops_per_s")
        assert (s.precision is not None) == (s.ceiling == "flops_per_s")


def _have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.slow
@pytest.mark.skipif(_have_gpu(), reason="checks the no-GPU path")
def test_calibrate_without_a_gpu_exits_3(tmp_path):
    pytest.importorskip("torch")
    res = CliRunner().invoke(cli, ["calibrate", "--probes", "fma_fp32", "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 3 and "no CUDA GPU" in res.output


def test_unknown_probe(tmp_path):
    res = CliRunner().invoke(cli, ["calibrate", "--probes", "gemm_fp4", "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 2 and "unknown probe" in res.output      # a name off a fixed list, as a bad --tool


@pytest.mark.gpu
def test_calibrate_on_the_gpu(tmp_path):
    res = CliRunner().invoke(cli, ["calibrate", "--probes", "fma_fp32,copy_dram,gemm_bf16", "--repeats", "5",
                                   "--db", str(tmp_path / "a.db"), "--json"])
    assert res.exit_code == 0, res.output
    cal = json.loads(res.stdout)["calibration"]
    assert cal["ceilings"]["flops_per_s"]["fp32"] > 1e13 and cal["ceilings"]["dram_bytes_per_s"] > 1e12


@pytest.mark.slow
def test_probes_build_through_the_pairs_binding(tmp_path, monkeypatch):
    """probes.cu is built and bound by aisp_kernels.binding, like the pairs' sources: every
    launcher has its signature, the host-side constant reads back, CUDA errors decode."""
    from pair_testing import have_nvcc, kept_build_dir

    if not have_nvcc():
        pytest.skip("needs nvcc")
    from aisp_prof.calibrate import probes

    monkeypatch.setenv("AISP_BUILD_DIR", str(kept_build_dir()))
    probes._library.cache_clear()
    library = probes._library()
    for name, (argtypes, restype) in probes._FUNCTIONS.items():
        fn = library.fn(name)
        assert list(fn.argtypes) == list(argtypes) and fn.restype is restype
    assert library.fn("aisp_probe_chains")() == 8
    with pytest.raises(RuntimeError, match=r"aisp_copy_f4 failed: .*\(cudaError 1\)"):
        library.check(1, "aisp_copy_f4")
    probes._library.cache_clear()
