"""Plain copies of the shipped sample files. The samples are kept gzipped (`nsys.sqlite.gz`,
`ncu_raw.csv.gz`, `check.json.gz`: dev/shrink_samples.py) and aisp-prof reads them so; a test that
needs the plain file (to cut it, to open it with sqlite3, to compare the two forms) takes a copy."""
from __future__ import annotations

import atexit
import functools
import gzip
import shutil
import tempfile
from pathlib import Path


def shipped(path: Path) -> Path:
    """`path` as shipped: itself, or `path.gz`."""
    gz = path.with_name(path.name + ".gz")
    return path if path.exists() or not gz.exists() else gz


def shipped_bytes(path: Path) -> bytes:
    """The plain bytes of the shipped `path`, gunzipped if shipped gzipped."""
    src = shipped(path)
    data = src.read_bytes()
    return gzip.decompress(data) if src != path else data


def plain_file(path: Path, dest: Path) -> Path:
    """A plain copy of the shipped `path` (gunzipped if shipped gzipped) at `dest` (a file or a folder)."""
    src = shipped(path)
    target = dest / path.name if dest.is_dir() else dest
    if src.name.endswith(".gz") and not path.name.endswith(".gz"):
        target.write_bytes(gzip.decompress(src.read_bytes()))
    else:
        shutil.copyfile(src, target)
    return target


def plain_copy(run_dir: Path, dest: Path) -> Path:
    """A copy of a run folder at `dest` with every gzipped file of it gunzipped."""
    shutil.copytree(run_dir, dest)
    for gz in sorted(dest.glob("*.gz")):
        gz.with_name(gz.name[: -len(".gz")]).write_bytes(gzip.decompress(gz.read_bytes()))
        gz.unlink()
    return dest


@functools.lru_cache(maxsize=None)
def _plain_folder(source: Path) -> Path:
    """The folder of this test process (removed when it exits) that holds the plain copies of the
    files of `source`, one per source folder: a job's rank exports lie side by side there."""
    folder = Path(tempfile.mkdtemp(prefix="aisp_plain_samples_"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.lru_cache(maxsize=None)
def plain_path(path: Path) -> Path:
    """`path` if it is there, else a plain copy of the shipped `path.gz` in a folder of this test
    process (removed when it exits), made once: for tests that open a sample or a fixture with
    sqlite3, or need its plain name (tests/fixtures keeps its nsys SQLite exports gzipped too).
    The copies of one folder's files share a folder. Nothing is written beside `path`."""
    if path.exists():
        return path
    return plain_file(path, _plain_folder(path.parent))


class FolderRuns:
    """A database of every shipped sample run (`sample_dbs`' shared one) read as if it held only
    the runs of `runs` (one per pair): a pair name means that pair's run among them, so a test of
    one samples folder needs no import of its own. `run` and `kernels` as the API database's."""

    def __init__(self, database, runs: list[Path]):
        self.database = database
        self.run_of = {run.name.split("-", 1)[1].rsplit("-", 1)[0]: run.name for run in runs}
        assert len(self.run_of) == len(runs), "one run per pair"

    def _run_id(self, ref: str) -> str:
        """A pair name or a run id, as one of these runs' ids (never another folder's run)."""
        run_id = self.run_of.get(ref, ref)
        assert run_id in self.run_of.values(), f"{ref} is not one of this folder's runs"
        return run_id

    def run(self, ref: str):
        return self.database.run(self._run_id(ref))

    def kernels(self, ref: str):
        return self.database.kernels(self._run_id(ref))
