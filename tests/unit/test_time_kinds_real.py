"""Issue 28 on real samples (tests/fixtures/time_kinds/, one H200, README there): each kind of time
is the same at every position of a round, so a host-bound variant's time no longer depends on where
it was queued, and each pair's headline uses the time its lesson is about."""
from __future__ import annotations

import gzip
import json
import statistics

import pandas as pd
import pytest

from aisp_prof.api import open_db
from aisp_prof.stats import median_rel_halfwidth
from aisp_prof.paths import data_root

FIXTURES = data_root() / "tests" / "fixtures" / "time_kinds"
STREAMS = "20261127T171543Z-ch10.stream_concurrency-45cc"
QUANT = "20261127T171610Z-ch14.gpu_quantization-5c82"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = open_db(tmp_path_factory.mktemp("time_kinds") / "a.db")
    for run in (STREAMS, QUANT):
        database.import_path(FIXTURES / run)
    return database


def _by_slot(samples: pd.DataFrame) -> dict[tuple[str, str], dict[int, tuple[float, float]]]:
    """(variant, kind) -> {slot: (median, half-width of its 95% interval)}."""
    out: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    for (v, kind, slot), g in samples.groupby(["variant", "kind", "slot"]):
        median = statistics.median(g["time_ns"])
        out.setdefault((v, kind), {})[int(slot)] = (median, median * median_rel_halfwidth(list(g["time_ns"])))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("run", [STREAMS, QUANT])
def test_no_time_depends_on_its_position_in_a_round(db, run):
    """ABBA rounds put every variant first and last; each kind's median is the same at each
    position within the two medians' 95% intervals, or 1% for GPU time, 6% for the host's latency
    and steady, 1.2 us for a call of a few microseconds (gpu_compiled's three Triton kernels: 8.8
    us after a block of its own, 9.9 us after gpu's, a GPU cache warm with other code). The legacy
    timer's position effect on streams32 was 121 us against 133-952 us."""
    samples = db.run(run).samples
    assert set(samples["kind"]) == {"gpu", "latency", "steady"}
    assert _position_effects(samples) == []


def _position_effects(samples: pd.DataFrame) -> list[tuple[str, str]]:
    """(variant, kind) whose medians at the two positions differ beyond the test's tolerance."""
    out = []
    for (v, kind), per_slot in _by_slot(samples).items():
        if len(per_slot) != 2:
            continue                  # a variant alone in its rounds (the others wait for the GPU)
        (a, da), (b, db_) = per_slot.values()
        if abs(a - b) >= max(da + db_, (0.01 if kind == "gpu" else 0.06) * min(a, b), 1200.0):
            out.append((v, kind))
    return out


def test_the_criterion_catches_a_position_effect():
    """The first design of this timer held one round for all variants: the stream_concurrency
    baseline then ran 712 us with streams32's 32-stream fork/join queued behind it and 448 us
    after it (H200, fixtures/time_kinds/shared_round_stream_concurrency_h200.json.gz)."""
    path = FIXTURES / "shared_round_stream_concurrency_h200.json.gz"
    samples = pd.DataFrame(json.loads(gzip.open(path, "rt").read())["samples"])
    assert ("baseline", "gpu") in _position_effects(samples)


def test_a_host_bound_variant_is_named_so_and_its_gpu_time_is_the_gpus(db):
    """streams32 overlaps 128 kernels on 32 streams: its GPU time is a quarter of the baseline's
    (124 vs 446 us), but back to back the host's 128 launches and 64 event operations take ~500 us
    a call, so it is host-bound and the table says so beside the GPU-time headline."""
    rows = {r["variant"]: r for r in db.summary_result(STREAMS)["summary"]}
    base, s32 = rows["baseline"], rows["streams32"]
    assert s32["time_class"] == "host_bound"           # the baseline's class follows the lease's host (see README)
    assert 120e3 < s32["gpu_events_median_ns"] < 130e3 and 440e3 < base["gpu_events_median_ns"] < 452e3
    assert s32["steady_median_ns"] > 3.5 * s32["gpu_events_median_ns"]
    assert s32["speedup_timer"] == "gpu_events" and 3.4 < s32["speedup_vs_baseline"] < 3.8
    assert s32["speedup_by_timer"]["steady"] < 1.0             # a loop of calls gains nothing


def test_the_gpu_quantization_baseline_waits_for_the_gpu_and_no_longer_drifts(db):
    """Its 32 synchronous copies per call: no gpu samples (it cannot be queued ahead), its speedups by
    latency as the pair declares; with Inductor's compile workers stopped after each factory its
    time stays ~2 ms per call (before: 1.99 ms, then 128 ms after the compiled variant's factory)."""
    result = db.summary_result(QUANT)
    rows = {r["variant"]: r for r in result["summary"]}
    samples = db.run(QUANT).samples
    assert samples[(samples["variant"] == "baseline") & (samples["kind"] == "gpu")].empty
    assert rows["baseline"]["waits_for_gpu"] and rows["baseline"]["time_class"] == "host_bound"
    assert {rows[v]["speedup_timer"] for v in ("gpu", "gpu_compiled")} == {"latency"}
    assert 1.4e6 < rows["baseline"]["latency_median_ns"] < 2.5e6
    assert not [f for f in result["findings"] if f["rule"] == "drifted"]
    assert not result["headline"]["withheld"]
