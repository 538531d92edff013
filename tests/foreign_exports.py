"""The H100 `--set full` and `.sum` exports of the same four kernels (tests/fixtures/foreign_h100/),
parsed once per test module, for the tests that compare the two (test_foreign_ncu, test_sector_bytes).
Import the fixtures into a test module to use them."""
from __future__ import annotations


import pytest
from repo_paths import FIXTURES

from aisp_prof.parse.ncu.csv_page import parse_ncu_csv

FOREIGN = FIXTURES / "foreign_h100"
FULL = FOREIGN / "full_raw_base.csv"
SUM = FOREIGN / "sum_raw_base.csv"


@pytest.fixture(scope="module")
def full():
    return parse_ncu_csv(FULL)


@pytest.fixture(scope="module")
def summed():
    return parse_ncu_csv(SUM)


def by_range(parse) -> dict[str, int]:
    """{NVTX range: row} of a parsed export's launches."""
    return {r: i for i, r in enumerate(parse.launches["nvtx_range"])}
