"""`aisp-prof check --fuzz N`: shapes drawn inside each pair's size rules (edges first, the same
seed the same shapes), each checked against float64; a table of shape -> pass/skip/fail, exit 7
on any wrong result. CPU only: a pair file checked with --device cpu, and the child's crash
handling with a fake child."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from aisp_prof.cli import cli  # noqa: E402
from aisp_prof.collect.correctness import fuzz, shape_check  # noqa: E402
from aisp_prof.pairs import discover  # noqa: E402
from aisp_prof.pairs.size_rules import broken_rules  # noqa: E402

PAIRS = discover()
BUDGET = fuzz.Budget(256 << 20, 1e11)

PAIR_FILE = '''
import torch
from aisp_prof.pairs import KernelPair, SizeRule


def make_inputs(sizes, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn(sizes["rows"], sizes["cols"], generator=gen, device=device)}


def _variant(wrong_when, no_kernel_when):
    def factory(inputs):
        x = inputs["x"]
        y = torch.empty_like(x)
        if no_kernel_when(x):
            raise RuntimeError("No available kernel. Aborting execution.")

        def launch():
            torch.mul(x, 3 if wrong_when(x) else 2, out=y)
            return y
        return launch
    return factory


PAIR = KernelPair(
    name="mine.doubles", chapter=1, lesson="x2", make_inputs=make_inputs,
    variants={"baseline": _variant(lambda x: False, lambda x: False),
              "odd_rows_wrong": _variant(lambda x: x.shape[0] % 2 == 1 and WRONG, lambda x: False),
              "wide_no_kernel": _variant(lambda x: False, lambda x: x.shape[1] > 64)},
    reference=lambda i: i["x"].double() * 2, flops=lambda s: s["rows"] * s["cols"],
    bytes=lambda s: 8 * s["rows"] * s["cols"], sizes={"rows": 64, "cols": 96},
    size_rules=(SizeRule("cols", step=4, why="float4 rows"),))
'''


def _pair_file(tmp_path: Path, wrong: bool) -> Path:
    path = tmp_path / "doubles.py"
    path.write_text(f"WRONG = {wrong}\n" + PAIR_FILE)
    return path


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_shapes_are_inside_the_rules_and_the_budget_and_reproducible(pair):
    shapes = fuzz.draw_shapes(pair, 8, seed=3, budget=BUDGET)
    assert shapes and shapes == fuzz.draw_shapes(pair, 8, seed=3, budget=BUDGET)
    assert len({fuzz.shape_text(s) for s in shapes}) == len(shapes)
    for s in shapes:
        assert set(s) == set(pair.sizes) and not broken_rules(pair.size_rules, s), s
        assert fuzz.fits(pair, s, BUDGET), s


def test_the_edges_come_first():
    pair = next(p for p in PAIRS if p.name == "ch10.cluster_pipeline")    # n, k: multiples of 8
    smallest, big, *_ = fuzz.draw_shapes(pair, 5, budget=BUDGET)
    assert smallest == {"m": 1, "n": 8, "k": 8}
    assert fuzz.fits(pair, big, BUDGET) and not all(fuzz.fits(pair, {**big, k: 2 * v}, BUDGET) for k, v in big.items())
    assert fuzz.draw_shapes(pair, 5, seed=1, budget=BUDGET)[2:] != fuzz.draw_shapes(pair, 5, seed=2, budget=BUDGET)[2:]


def test_check_fuzz_on_the_cpu_passes_a_right_pair_and_names_the_skips(tmp_path):
    res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), "--fuzz", "6", "--device", "cpu",
                                   "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert len(rows) == 6 and {r["status"] for r in rows} == {"pass"}
    assert all(r["sizes"]["cols"] % 4 == 0 for r in rows)
    wide = [r for r in rows if r["sizes"]["cols"] > 64]
    assert wide and all("no kernel for these sizes" in r["skipped"]["wide_no_kernel"] for r in wide)


def test_a_wrong_shape_fails_with_exit_7_and_the_table_says_where(tmp_path):
    res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, True)), "--fuzz", "8", "--seed", "5",
                                   "--device", "cpu"])
    assert res.exit_code == 7, res.output
    assert "odd_rows_wrong: rel_err_vs_reference" in res.stdout and " fail " in res.stdout
    assert "shape(s):" in res.stdout and res.output.count("aisp-prof: error") == 1


def test_sizes_off_the_rules_are_refused_before_anything_runs(tmp_path):
    res = CliRunner().invoke(cli, ["check", str(_pair_file(tmp_path, False)), "--sizes", "cols=30", "--device", "cpu"])
    assert res.exit_code == 12 and "nearest valid: cols=28 or cols=32" in res.output


def test_a_dead_check_process_costs_only_its_shape(monkeypatch, tmp_path):
    """A child that dies at its second shape: that shape fails, a new child takes the rest."""
    from aisp_prof.pairs.files import load_file

    pair, calls = load_file(_pair_file(tmp_path, False)), []

    def fake_child(pair, shapes, variants, trials, tmp):
        calls.append(len(shapes))
        done = shapes[:1] if len(calls) == 1 else shapes
        lines = [shape_check.check_line(pair, s, "cpu", variants, trials) for s in done]
        return lines, None, 1 if len(calls) == 1 else 0, "Segmentation fault"

    monkeypatch.setattr(shape_check, "_child", fake_child)
    shapes = [{"rows": r, "cols": 8} for r in (2, 4, 6, 8)]
    results = shape_check.check_in_children(pair, shapes, ["baseline"])
    assert calls == [4, 2] and [r.status for r in results] == ["pass", "fail", "pass", "pass"]
    assert "the check process died (exit 1): Segmentation fault" in results[1].detail


def test_a_child_that_hangs_is_killed_and_costs_its_shape(monkeypatch, tmp_path):
    import sys

    out = tmp_path / "lines.jsonl"
    script = f"import time; open({str(out)!r}, 'a').write('{{}}\\n'); time.sleep(60)"
    monkeypatch.setattr(shape_check, "POLL_S", 0.05)
    rc, why = shape_check._run_watched([sys.executable, "-c", script], out, timeout_s=1.0)
    assert rc != 0 and "no result for 1 s: killed" in why and out.read_text() == "{}\n"


def test_the_real_child_without_a_gpu_skips_every_shape_with_the_reason(tmp_path):
    from aisp_prof.pairs.files import load_file

    if torch.cuda.is_available():
        pytest.skip("the child runs the shapes on a GPU here")
    pair = load_file(_pair_file(tmp_path, False))
    results = shape_check.check_in_children(pair, [{"rows": 2, "cols": 8}, {"rows": 3, "cols": 4}], ["baseline"])
    assert [r.status for r in results] == ["skip", "skip"] and all("no CUDA GPU" in r.detail for r in results)
