"""Real captured runs for the verdict tests: profiles/samples (H200), samples_h100, samples_h100_ch10,
loaded from their folders, with the pair's declarations read as `aisp-prof summary` reads them."""
from __future__ import annotations

from functools import cache, lru_cache

from aisp_prof.analyze.verdict.rules import RuleInput
from aisp_prof.api import declared, summary_records
from aisp_prof.store.ingest import load_run_dir
from aisp_prof.model.run_data import RunData
from repo_paths import PROFILES


@cache
def sample(folder: str, pair: str) -> RunData:
    """The one run of `pair` in profiles/<folder>/ (e.g. "samples_h100", "ch09.fused_l2norm")."""
    (found,) = [d for d in (PROFILES / folder).iterdir() if d.is_dir() and d.name.split("-", 1)[1].rsplit("-", 1)[0] == pair]
    return declared(load_run_dir(found))


def rule_input(folder: str, pair: str) -> RuleInput:
    run = sample(folder, pair)
    return RuleInput(run.info, summary_records(run), run.timings, run.timeline, run.kernels)
