"""The chapter READMEs' tables of shipped profiled runs are what `aisp-prof summary` says of them,
printed, never typed (issue 28): every block between `<!-- run-table: FOLDER -->` and
`<!-- /run-table -->` equals what dev/run_table.py prints for FOLDER (render.readme.run_table), and
a row's numbers are the summary's own."""
from __future__ import annotations

import re

import pytest

from pair_testing import import_fresh
from repo_paths import ROOT as REPO_ROOT

from aisp_prof.render.readme.run_table import markdown, row

BLOCK = re.compile(r"<!-- run-table: (\S+) -->\n(.*?)\n<!-- /run-table -->", re.S)
READMES = sorted((REPO_ROOT / "kernels").glob("ch*/README.md"))


def _dev_script():
    return import_fresh(REPO_ROOT / "dev" / "run_table.py", "run_table_dev")


def _blocks():
    return [(readme, folder, text) for readme in READMES for folder, text in BLOCK.findall(readme.read_text())]


def _params():
    return [pytest.param(*b, id=f"{b[0].parent.name}:{b[1]}") for b in _blocks()]


@pytest.fixture(scope="module")
def results_of():
    """Each folder's summary results, its runs imported once for the whole module (~5 s a folder)."""
    dev, cache = _dev_script(), {}

    def results(folder: str):
        if folder not in cache:
            cache[folder] = dev.results_of(REPO_ROOT / folder)
        return cache[folder]
    return results


def _row_of(results, pair: str) -> list[str]:
    result = next(r for r in results if r["run"]["pair"] == pair)
    return [c.strip() for c in row(result).strip("|").split("|")]


def test_every_chapter_with_h200_runs_prints_their_table():
    """ch09, ch10 and ch14 carry their shipped H200 runs' table (a README that drops it fails here)."""
    shown = {(readme.parent.name, folder) for readme, folder, _ in _blocks()}
    assert {("ch09", "profiles/samples_h200_ch09"), ("ch10", "profiles/samples_h200_ch10"),
            ("ch14", "profiles/samples_h200_ch14")} <= shown


@pytest.mark.parametrize("readme,folder,text", _params())
def test_readme_table_equals_what_summary_says(readme, folder, text, results_of):
    expected = markdown(results_of(folder))
    assert text == expected, f"{readme.relative_to(REPO_ROOT)}: regenerate with python dev/run_table.py {folder}"
    assert max(len(line) for line in text.splitlines()) <= 120


def test_a_row_is_the_summary_headline_and_its_other_timers(results_of):
    """regional_triton, as `aisp-prof summary` prints it: 'regional (the book's optimization): 1.29x over
    baseline (GPU time, CUDA events) ... book B200 2.47x'; by other timers: nsys GPU time 1.32x, ncu 1.29x."""
    assert _row_of(results_of("profiles/samples_h200_ch14"), "ch14.regional_triton") == \
        ["regional_triton", "regional", "1.29x GPU", "1.32x", "1.29x", "2.47x", "host_bound"]


def test_a_withheld_headline_shows_its_rules_and_its_measured_ratio_marked(results_of):
    results = results_of("profiles/samples_h200_ch14")
    assert _row_of(results, "ch14.graph_break_control_flow") == \
        ["graph_break_control_flow", "withheld: bimodal", "1.81x steady, withheld", "1.21x", "1.27x", "1.65x",
         "host_bound"]
    assert _row_of(results, "ch14.triton_persistent")[1:3] == \
        ["withheld: bimodal, timers_disagree", "6.75x steady, withheld"]


def test_a_comparison_pair_claims_no_speedup(results_of):
    assert _row_of(results_of("profiles/samples_h200_ch14"), "ch14.cublas_vs_cutlass") == \
        ["cublas_vs_cutlass", "comparison", "-", "-", "-", "2.62x (cutlass_sm80)", ""]


def test_a_folder_without_runs_is_a_one_line_error(tmp_path):
    with pytest.raises(SystemExit, match="no run folder"):
        _dev_script().results_of(tmp_path)
