"""Ships the pairs and the real sample runs with a non-editable install.

`pip install .` copies kernels/, profiles/samples*/ and profiles/calibration/ to
<prefix>/share/aisp-prof/, where aisp_prof.paths finds them, so `aisp-prof quickstart` works
from any folder. Everything else is in setup.cfg.
"""
from pathlib import Path

from setuptools import setup

# every sample set (chapters 9, 10 and 14 on both cards, the 2-GPU runs): the no-GPU quick start stores them all
SHIPPED = ("kernels", *sorted(str(p) for p in Path("profiles").glob("samples*") if p.is_dir()), "profiles/calibration")


def data_files(*folders: str) -> list[tuple[str, list[str]]]:
    """(install folder, files) for every file under `folders`, keeping the tree."""
    out: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                out.setdefault(str(Path("share/aisp-prof") / path.parent), []).append(str(path))
    return sorted(out.items())


setup(data_files=data_files(*SHIPPED))
