"""The package boundary of issue 10: every aisp_prof module imports without torch or triton, and
none of them pulls in aisp_kernels (the helpers that only kernel pairs need)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from repo_paths import ROOT

_IMPORT_ALL = """
import importlib, pkgutil, sys
sys.modules['torch'] = None          # `import torch` now raises ImportError
sys.modules['triton'] = None
import aisp_prof
names = [m.name for m in pkgutil.walk_packages(aisp_prof.__path__, 'aisp_prof.')
         if not m.name.endswith('__main__')]    # __main__ runs the CLI
for name in names:
    importlib.import_module(name)
leaked = sorted(k for k in sys.modules if k == 'aisp_kernels' or k.startswith('aisp_kernels.'))
assert not leaked, leaked
print(len(names))
"""


@pytest.mark.slow
def test_every_aisp_prof_module_imports_without_torch_or_aisp_kernels():
    proc = subprocess.run([sys.executable, "-c", _IMPORT_ALL], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) > 30          # the walk really found the package's modules

