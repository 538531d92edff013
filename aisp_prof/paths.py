"""Where aisp-prof's shipped files are: the kernel pairs, the sample runs, the calibrations.

A checkout has them beside the package (`kernels/`, `profiles/samples/`, ...). A non-editable
install (`pip install .`) copies the same folders to `<prefix>/share/aisp-prof/` (setup.py's
data_files), so `aisp-prof quickstart` run from any folder still finds the samples. Every stage
asks here instead of counting parent folders of its own `__file__`.
"""
from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path

from .errors import InstallError

PACKAGE_DIR = Path(__file__).resolve().parent
SHARE_NAME = "aisp-prof"
MARKER = Path("kernels")              # what a data root must hold


def _installed_roots() -> list[Path]:
    """<prefix>/share/aisp-prof for the prefixes pip may have installed data files under."""
    prefixes = [sysconfig.get_path("data"), sys.prefix, sys.base_prefix, getattr(site, "USER_BASE", None)]
    return [Path(p) / "share" / SHARE_NAME for p in dict.fromkeys(p for p in prefixes if p)]


def checkout_root() -> Path | None:
    """The source checkout the package runs from (an editable install or PYTHONPATH), or None."""
    root = PACKAGE_DIR.parent
    return root if (root / MARKER).is_dir() and (root / "setup.cfg").is_file() else None


def data_root() -> Path:
    """$AISP_ROOT, else the checkout, else the installed share folder; InstallError if none has
    the shipped kernels/ folder."""
    env = os.environ.get("AISP_ROOT")
    candidates = [Path(env)] if env else []
    checkout = checkout_root()
    candidates += ([checkout] if checkout else []) + _installed_roots()
    for root in candidates:
        if (root / MARKER).is_dir():
            return root
    raise InstallError("aisp-prof's shipped files (kernels/, profiles/samples/) were not found beside the package "
                    f"or under {', '.join(map(str, _installed_roots()))}; reinstall, or set AISP_ROOT to a checkout")


def kernels_root() -> Path:
    """The folder of chNN/<pair>.py modules: $AISP_KERNELS (tests, the profiled child), else shipped."""
    env = os.environ.get("AISP_KERNELS")
    return Path(env) if env else data_root() / "kernels"


def samples_dir() -> Path:
    """Real runs (one per pair, H200) shipped for the no-GPU quick start and the tests."""
    return data_root() / "profiles" / "samples"


def calibration_dir() -> Path:
    """Measured ceilings shipped per hardware key (profiles/calibration/<key>.json)."""
    return data_root() / "profiles" / "calibration"


def kernels_extra_install() -> str:
    """The command that adds the kernels extra to this install: `pip install -e '.[kernels]'` only
    in the checkout aisp-prof runs from (in another folder, `.` is not aisp-prof: issue 31), the
    checkout's path from elsewhere, and the package's name for an install from PyPI."""
    root = checkout_root()
    if root is None:
        return "pip install 'aisp-prof[kernels]'"
    here = Path.cwd().resolve() == root.resolve()
    return f"pip install -e '{'.' if here else root}[kernels]'"
