"""Where things are in the checkout, for every test: the one place that knows how deep `tests/`
sits. Module-level constants (a test's PAIR_PATH) import these; a test function takes the
`repo_root` fixture (conftest.py), which is ROOT."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent      # the checkout: aisp_prof/, kernels/, profiles/, tests/
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
KERNELS = ROOT / "kernels"
PROFILES = ROOT / "profiles"
SAMPLES = PROFILES / "samples"


def every_sample_run() -> list[Path]:
    """Every shipped sample run folder, profiles/samples*/<run id> (H200 and H100, chapters 9, 10
    and 14), in path order: what `sample_dbs.original(*every_sample_run())` imports once."""
    return sorted(p for p in PROFILES.glob("samples*/*") if (p / "run.json").is_file())
