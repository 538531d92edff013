"""Issue 18: `list`, `history` and `bench list-targets` work where the kernels extra (torch,
triton) is not installed: pair metadata is read from the sources (`pairs.static`), history reads
only the database. The CLI runs in a subprocess where an import hook refuses torch and triton,
as a light `pip install -e .` leaves them."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from repo_paths import ROOT
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.pairs.static import pair_infos, read_pair_info
from aisp_prof.store.ingest import sample_run_dirs

sys.path.insert(0, str(ROOT / "benchmarks"))
from fault_battery import NO_TORCH  # noqa: E402  (the CLI with torch and triton unimportable)




def without_torch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NO_TORCH, *args], cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "120"})


@pytest.fixture(scope="module")
def fused_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("notorch") / "a.db"
    run = next(d for d in sample_run_dirs() if "ch09.fused_l2norm" in d.name)
    assert CliRunner().invoke(cli, ["import", "--db", str(db), str(run)]).exit_code == 0
    return db


@pytest.mark.slow
def test_list_without_torch_says_per_pair_that_the_kernels_extra_is_missing():
    proc = without_torch("list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == len(pair_infos()) > 40
    fused = next(r for r in rows if r["name"] == "ch09.fused_l2norm")
    assert fused["variants"] == ["baseline", "cuda", "triton"] and fused["chapter_key"] == "ch09"
    assert fused["default_sizes"] == {"rows": 8192, "cols": 8192} and fused["requires"]["min_cc"] == "9.0"
    assert all(not r["can_run"] and r["reason"].startswith("kernels extra not installed") for r in rows)
    table = without_torch("list", "--chapter", "ch09")
    assert table.returncode == 0, table.stderr
    assert "ch09.fused_l2norm" in table.stdout and "kernels extra not installed" in table.stdout
    assert "pip install -e '.[kernels]'" in table.stderr


@pytest.mark.slow
def test_bench_list_targets_without_torch():
    proc = without_torch("bench", "list-targets", "--chapter", "ch10")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and all(line.startswith("ch10.") and "kernels extra not installed" in line for line in lines)


@pytest.mark.slow
def test_history_without_torch_reads_the_database(fused_db):
    proc = without_torch("history", "ch09.fused_l2norm", "--db", str(fused_db))
    assert proc.returncode == 0, proc.stderr
    # the summary's speedup (nsys GPU time), no longer the CUDA-event 3.03x (issue 16)
    assert "20261126T011557Z-ch09.fused_l2norm-90df" in proc.stdout and "3.13x" in proc.stdout
    typo = without_torch("history", "ch09.fused_l2nrom", "--db", str(fused_db))
    assert typo.returncode == 2 and "did you mean ch09.fused_l2norm" in typo.stderr


def test_static_metadata_matches_the_imported_pairs():
    """What `list` shows without torch is what the pairs say when imported, for every pair."""
    pytest.importorskip("torch")
    from aisp_prof.pairs import discover

    real = {p.name: p for p in discover()}
    infos = pair_infos()
    assert sorted(real) == [i.name for i in infos]
    for info in infos:
        pair = real[info.name]
        assert (info.chapter, info.lesson, info.variants) == (pair.chapter, pair.lesson, tuple(pair.variants))
        assert info.sizes == dict(pair.sizes), info.name
        requires = asdict(pair.requires)
        assert all(requires[k] == v for k, v in info.requires.items()), info.name


def test_static_reader_runs_nothing_and_skips_what_is_not_literal(tmp_path):
    module = tmp_path / "ch99" / "odd.py"
    module.parent.mkdir()
    module.write_text("import sys\nsys.exit('ran')\nN = 1 << 10\nNAME = 'ch99.odd'\n"
                      "PAIR = KernelPair(name=NAME, chapter=99, lesson='x', variants={'baseline': f, 'fast': g},\n"
                      "                  sizes=make_sizes(), requires=Requirements(min_cc=(9, 0), needs=('nvcc',)))\n")
    info = read_pair_info(module)
    assert (info.name, info.variants, info.sizes) == ("ch99.odd", ("baseline", "fast"), None)
    assert info.requires == {"min_cc": (9, 0), "needs": ("nvcc",)}
    (tmp_path / "ch99" / "helper.py").write_text("X = 1\n")
    assert [i.name for i in pair_infos(tmp_path)] == ["ch99.odd"]


def test_a_broken_import_of_our_own_code_is_not_blamed_on_the_extra(tmp_path):
    """Only a package that is not installed makes a pair 'kernels extra not installed'; an
    import error in aisp-prof's own code still fails where it is found."""
    from aisp_prof.errors import RequirementError
    from aisp_prof.pairs.discovery import discover_here

    (tmp_path / "ch99").mkdir()
    (tmp_path / "ch99" / "odd.py").write_text("from aisp_kernels import no_such_helper\n"
                                              "PAIR = KernelPair(name='ch99.odd', chapter=99, lesson='x', "
                                              "variants={'baseline': f})\n")
    with pytest.raises(RequirementError, match="cannot import"):
        discover_here(tmp_path)
    (tmp_path / "ch99" / "odd.py").write_text("import no_such_package_installed\n"
                                              "PAIR = KernelPair(name='ch99.odd', chapter=99, lesson='x', "
                                              "variants={'baseline': f})\n")
    pairs, missing = discover_here(tmp_path)
    assert pairs == [] and [(i.name, why) for i, why in missing] == [
        ("ch99.odd", "kernels extra not installed (no module no_such_package_installed)")]


# `python -c COLLECT_WITHOUT_TORCH`: pytest collects the whole suite where torch and triton are not
# installed (`import` fails and importlib.util.find_spec answers None, as after a light install)
COLLECT_WITHOUT_TORCH = """
import importlib.util, sys
GONE = ('torch', 'triton')
class NoKernelsExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in GONE:
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
sys.meta_path.insert(0, NoKernelsExtra())
_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if name.split('.')[0] in GONE else _find_spec(name, package)
import pytest
code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'tests'])
assert not any(m.split('.')[0] in GONE for m in sys.modules), 'torch was imported'
sys.exit(code)
"""


@pytest.mark.slow
def test_the_suite_collects_without_torch():
    """Without the kernels extra every test module collects: a pair test that needs torch skips
    (pytest.importorskip) instead of failing on an import at the top of a shared helper."""
    proc = subprocess.run([sys.executable, "-c", COLLECT_WITHOUT_TORCH], cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "error" not in proc.stdout.splitlines()[-1]
    collected = [line for line in proc.stdout.splitlines() if "::" in line]
    assert len(collected) > 500
    # the every-pair checks that need no torch are collected for each pair
    assert "tests/pairs/test_every_pair.py::test_the_declaration_names_the_pair_after_its_file[ch09.fused_l2norm]" in collected
