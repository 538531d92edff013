"""The gate's host-side slowdown fixture (tests/fixtures/gate_kernels/ch14/attention_eager_sdpa.py,
issue 28): the real pair with a busy-wait before each sdpa_flash call, found by the pair's own name
under $AISP_KERNELS, timed by the same kind of time as the real pair (steady) so the real pair's
recorded evidence applies. The GPU run that shows the gate catching it is in the issue's closing note."""
from __future__ import annotations


import pytest
from repo_paths import FIXTURES

from aisp_prof.pairs.source import source_digest
from aisp_prof.paths import data_root

FIXTURE = FIXTURES / "gate_kernels" / "ch14" / "attention_eager_sdpa.py"
REAL = data_root() / "kernels" / "ch14" / "attention_eager_sdpa.py"


def test_the_fixture_is_the_real_pair_with_one_slowed_variant(monkeypatch):
    pytest.importorskip("torch")
    from aisp_prof import pairs

    monkeypatch.setenv("AISP_KERNELS", str(FIXTURE.parent.parent))
    pair = pairs.find("ch14.attention_eager_sdpa")
    assert set(pair.variants) == {"baseline", "sdpa_flash"} and pair.timer == "steady"
    assert pair.variants["sdpa_flash"].__name__ == "slowed_sdpa_flash"
    assert "deliberate host-side slowdown" in pair.lesson
    # another digest: a verdict against the real pair's evidence says it compares other code
    assert source_digest(FIXTURE)["sha256"] != source_digest(REAL)["sha256"]
