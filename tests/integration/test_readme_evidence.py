"""The chapter READMEs' gate tables are the recorded evidence, printed, never typed: every block
between `<!-- evidence-table: PATH -->` and `<!-- /evidence-table -->` equals what
dev/evidence_table.py prints for PATH (render.readme.evidence_table)."""
from __future__ import annotations

import json
import re

import pytest

from pair_testing import import_fresh
from repo_paths import ROOT as REPO_ROOT

from aisp_prof.pairs.book import Book
from aisp_prof.render.readme.evidence_table import far_from_book, markdown, per_call, three_digits

BLOCK = re.compile(r"<!-- evidence-table: (\S+) -->\n(.*?)\n<!-- /evidence-table -->", re.S)
READMES = sorted((REPO_ROOT / "kernels").glob("ch*/README.md"))


def _dev_script():
    return import_fresh(REPO_ROOT / "dev" / "evidence_table.py", "evidence_table_dev")


def _blocks():
    return [(readme, path, text) for readme in READMES for path, text in BLOCK.findall(readme.read_text())]


def test_every_chapter_with_h200_evidence_prints_its_table():
    """ch09, ch10 and ch14 carry the H200 file's table (a README that drops it fails here)."""
    shown = {path for _, path, _ in _blocks()}
    assert {f"kernels/{c}/expectations_h200.json" for c in ("ch09", "ch10", "ch14")} <= shown


@pytest.mark.parametrize("readme,path,text", _blocks(), ids=lambda x: str(x)[-40:] if isinstance(x, str) else None)
def test_readme_table_equals_the_recorded_evidence(readme, path, text):
    data = json.loads((REPO_ROOT / path).read_text())
    expected = markdown(data, _dev_script().books_for(data, REPO_ROOT / "kernels"))
    assert text == expected, f"{readme.relative_to(REPO_ROOT)}: regenerate with python3 dev/evidence_table.py {path}"


def test_times_and_ratios_keep_three_digits():
    assert [per_call(v) for v in (949_000, 84_800, 3_480_000, 1_900_000, 512, 2.5e9)] == \
        ["949 us", "84.8 us", "3.48 ms", "1.90 ms", "512 ns", "2.50 s"]
    assert three_digits(0.5173) == "0.517" and three_digits(54.31) == "54.3"


def test_a_book_ratio_far_from_ours_is_named_with_its_reason_or_its_absence():
    entry = {"summary": {"variants": {"baseline": {"median_ns": 100.0},
                                      "fast": {"median_ns": 20.0, "time_vs_baseline": 0.2}}}}
    assert far_from_book("ch10.x", entry, Book("fast", 2.0, off_reason="a reason")).endswith("a reason")
    assert "no reason declared" in far_from_book("ch10.x", entry, Book("fast", 2.0))
    assert far_from_book("ch10.x", entry, Book("fast", 4.0)) is None        # 5x against 4x: within 2x
