"""The bootstrap's array path (`intervals._rounds_as_rows`, used when every process timed the same
number of calls) gives the interval of the round-by-round loop exactly: same random numbers,
same order, same resamples. Checked on the timed samples of real shipped runs (one process of
400 calls each, on an H100 and an H200) and on the loop as it was written with `Generator.choice`."""
from __future__ import annotations

import numpy as np
import pytest
from repo_paths import PROFILES

from aisp_prof.analyze.timing import intervals as iv
from aisp_prof.store.ingest import load_run_dir

RUNS = ["samples_h100_ch10/20261126T122302Z-ch10.cluster_group-eb76",
        "samples_h200_ch10_early/20261126T230324Z-ch10.warp_specialization-6a38"]


def _loop(statistic, *paired, seed=0):
    """The bootstrap as it was before the array path: one round at a time, `rng.choice`."""
    rng, stats = np.random.default_rng(seed), np.empty(iv.BOOTSTRAP_ROUNDS)
    for b in range(iv.BOOTSTRAP_ROUNDS):
        chosen = rng.integers(0, len(paired[0]), size=len(paired[0]))
        stats[b] = statistic(*(np.concatenate([rng.choice(g[i], size=len(g[i])) for i in chosen]) for g in paired))
    tail = (1 - iv.CONFIDENCE) / 2 * 100
    return tuple(np.percentile(stats, [tail, 100 - tail]))


@pytest.mark.parametrize("run", RUNS)
def test_array_rounds_match_the_loop_on_real_samples(run):
    samples = load_run_dir(PROFILES / run).samples
    variants = sorted(samples["variant"].unique())
    assert len(variants) >= 2
    base = iv.groups(samples, variants[0])
    assert len({len(g) for g in base}) == 1          # the array path is the one taken
    for other in variants[1:]:
        a, b = iv.paired_groups(samples, variants[0], other)
        ratio = iv.ratio_interval(a, b, seed=7)
        assert (ratio.low, ratio.high) == _loop(lambda x, y: float(np.median(x) / np.median(y)), a, b, seed=7)
        med = iv.median_interval(b)
        assert (med.low, med.high) == _loop(np.median, b)


@pytest.mark.parametrize("sizes", [(5, 5, 5), (3, 9), (1,), (7, 7)])
def test_array_rounds_match_the_loop_on_uneven_and_even_processes(sizes):
    rng = np.random.default_rng(3)
    a = [rng.lognormal(0, 0.1, n) for n in sizes]
    b = [rng.lognormal(0, 0.1, n) for n in sizes]
    ratio = iv.ratio_interval(a, b, seed=1)
    assert (ratio.low, ratio.high) == _loop(lambda x, y: float(np.median(x) / np.median(y)), a, b, seed=1)
    assert ratio.low < ratio.value < ratio.high or len(sizes) == 1 and sizes[0] == 1


def test_an_interval_drawn_again_for_the_same_samples_is_remembered_and_the_same(monkeypatch):
    """The gate judges a pair's samples twice (its chase, then its verdict): the second draws nothing."""
    samples = load_run_dir(PROFILES / RUNS[1]).samples
    variants = sorted(samples["variant"].unique())
    a, b = iv.paired_groups(samples, variants[0], variants[1])
    monkeypatch.setattr(iv, "_MEMO", type(iv._MEMO)())
    drawn: list[int] = []
    real = iv.bootstrap
    monkeypatch.setattr(iv, "bootstrap", lambda *args, **kw: drawn.append(1) or real(*args, **kw))
    first, med = iv.ratio_interval(a, b, seed=7), iv.median_interval(b)
    assert len(drawn) == 2
    again = iv.ratio_interval([g.copy() for g in a], [g.copy() for g in b], seed=7)   # equal values, new arrays
    assert again == first and iv.median_interval(b) == med and len(drawn) == 2
    assert (first.low, first.high) == _loop(lambda x, y: float(np.median(x) / np.median(y)), a, b, seed=7)
    moved = [g.copy() for g in b]
    moved[0][0] *= 1.5                                  # one sample differs: drawn anew
    iv.ratio_interval(a, moved, seed=7)
    iv.ratio_interval(a, b, seed=8)                     # another seed: drawn anew
    iv.ratio_interval(b, a, seed=7)                     # numerator and denominator swapped
    iv.median_interval(a)                               # the median of other samples
    assert len(drawn) == 6
    monkeypatch.setattr(iv, "MEMO_ENTRIES", 2)
    iv.median_interval([np.array([1.0, 2.0])])
    assert len(iv._MEMO) == 2                           # the oldest went


def test_the_same_values_split_into_other_processes_are_drawn_anew(monkeypatch):
    """The processes are part of what is remembered: [1 2 3 4][10 11] and [1 2][3 4 10 11] pool the same
    values and resample them differently (the hierarchical bootstrap draws processes first)."""
    monkeypatch.setattr(iv, "_MEMO", type(iv._MEMO)())
    one = [np.array([1.0, 2, 3, 4]), np.array([10.0, 11])]
    two = [np.array([1.0, 2]), np.array([3.0, 4, 10, 11])]
    first, second = iv.median_interval(one), iv.median_interval(two)
    assert len(iv._MEMO) == 2 and (first.low, first.high) != (second.low, second.high)
    assert second == iv.bootstrap(np.median, two, per_row=lambda m: np.median(m, axis=1))
