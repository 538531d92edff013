"""The one run resolver: ids, prefixes, 'latest', pair names and chapters, on a plain listing."""
from __future__ import annotations

import pytest

from aisp_prof.errors import UnknownTargetError
from aisp_prof.store.select import latest_by_pair, resolve_run, select_runs

LISTING = [
    {"run_id": "20261126T0100Z-ch09.fused_l2norm-aaaa", "pair": "ch09.fused_l2norm", "label": None},
    {"run_id": "20261126T0200Z-import-bbbb", "pair": None, "label": "before.ncu-rep"},
    {"run_id": "20261126T0300Z-ch09.triton-cccc", "pair": "ch09.triton", "label": None},
    {"run_id": "20261126T0400Z-ch09.fused_l2norm-dddd", "pair": "ch09.fused_l2norm", "label": None},
    {"run_id": "20261126T0500Z-ch10.dsmem_reduction-eeee", "pair": "ch10.dsmem_reduction", "label": None},
]


def test_resolve_ids_prefixes_latest_and_pairs():
    assert resolve_run(LISTING, "latest") == LISTING[-1]["run_id"]
    assert resolve_run(LISTING, LISTING[1]["run_id"]) == LISTING[1]["run_id"]
    assert resolve_run(LISTING, "20261126T03") == LISTING[2]["run_id"]
    assert resolve_run(LISTING, "ch09.fused_l2norm") == LISTING[3]["run_id"]      # its newest run
    with pytest.raises(UnknownTargetError, match="ambiguous"):
        resolve_run(LISTING, "20261126T0")
    with pytest.raises(UnknownTargetError, match="did you mean ch09.fused_l2norm"):
        resolve_run(LISTING, "ch09.fused_l2nrm")
    with pytest.raises(UnknownTargetError, match="no runs in x.db"):
        resolve_run([], "latest", "x.db")


def test_select_targets_and_chapters():
    assert latest_by_pair(LISTING)["ch09.fused_l2norm"] == LISTING[3]["run_id"]
    assert select_runs(LISTING) == [LISTING[1]["run_id"], LISTING[2]["run_id"], LISTING[3]["run_id"],
                                    LISTING[4]["run_id"]]
    assert select_runs(LISTING, targets=["ch9"]) == [LISTING[2]["run_id"], LISTING[3]["run_id"]]
    assert select_runs(LISTING, targets=["ch10,ch09.triton"]) == [LISTING[2]["run_id"], LISTING[4]["run_id"]]
    assert select_runs(LISTING, runs=["latest", LISTING[0]["run_id"], "latest"]) == [LISTING[0]["run_id"],
                                                                                     LISTING[4]["run_id"]]
    with pytest.raises(UnknownTargetError, match="no stored run of target 'ch14'"):
        select_runs(LISTING, targets=["ch14"])
