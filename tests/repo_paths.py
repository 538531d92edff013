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
