"""pair_testing's own promises, where a broken one would show only as some later test failing."""
from __future__ import annotations

import sys

import pytest
from pair_testing import hide_package

import aisp_kernels


def test_a_hidden_package_is_hidden_in_that_test_only(monkeypatch):
    """A helper first imported while triton was hidden must not serve the tests after: run as one
    file, test_ch09_pairs.py's test_softmax_launch_config failed (triton_helpers.triton was None)
    because test_triton_pairs_import_without_triton, before it, had imported the helpers first."""
    pytest.importorskip("triton")
    monkeypatch.delitem(sys.modules, "aisp_kernels.triton_helpers", raising=False)  # as a session's
    monkeypatch.delattr(aisp_kernels, "triton_helpers", raising=False)              # first test finds it
    with pytest.MonkeyPatch.context() as hidden:
        hide_package(hidden, "triton")
        with pytest.raises(ImportError):
            import triton  # noqa: F401
        from aisp_kernels import triton_helpers
        assert triton_helpers.triton is None            # the pair under test meets them without triton
    from aisp_kernels import triton_helpers
    assert triton_helpers.triton is not None and triton_helpers.row_launch_config(100) == (128, 1, 1)
