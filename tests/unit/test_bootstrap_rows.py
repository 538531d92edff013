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
        "samples_h200_ch10/20261126T230324Z-ch10.warp_specialization-6a38"]


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
