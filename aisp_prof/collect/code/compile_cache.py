"""Where a timed process keeps what torch.compile and Triton compiled: by default the run's own
caches, shared by its processes; for a recording, an empty folder per process (`fresh_compile_cache`),
and for a gate's timing processes after the first too; with `kept_compile_cache`, a folder the user
keeps between gates for their first processes (`bench run --compile-cache`).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Mapping

from ...errors import OutputError
from .binary_store import binaries_kind
from .scoped import environment, made_writable
from ...naming import FRESH_AFTER_FIRST, FRESH_COMPILE_CACHE, KEPT_COMPILE_CACHE, SHARED_COMPILE_CACHE

CACHE_VARS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}   # variable -> its folder
FRESH_PREFIX = "aisp-compile-"     # a process's empty caches (`fresh_compile_cache`)
FRESH_MARK = "AISP_FRESH_COMPILE_CACHE"     # set by `fresh_compile_cache` to its folder: `in_fresh_cache`


def cache_dirs(folder: Path) -> dict[str, str]:
    """The cache variables pointing into `folder`: Inductor's at folder/inductor, Triton's at folder/triton."""
    return {var: str(folder / sub) for var, sub in CACHE_VARS.items()}


def fresh_compile_cache(under: Path | None = None) -> Path:
    """Point Inductor and Triton at an empty folder of this process, removed when it ends, before
    torch is imported: a recording's processes then each compile and autotune anew, as a fresh
    machine does. Sharing one cache, every process of a session reused the first one's choices, so its
    A/A margin saw one draw of them; ch14.regional_triton's max-autotune variants ran 8-10% faster on a
    fresh H200 lease with no code change, outside that margin. `under`: where to make the folder (the
    child's run folder: a process killed outright, whose exit handler never runs, leaves its cache
    there, and a failed or interrupted run's folder goes whole); default the temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix=FRESH_PREFIX, dir=under))
    os.environ.update(cache_dirs(folder))
    os.environ[FRESH_MARK] = str(folder)
    atexit.register(shutil.rmtree, folder, True)
    return folder


def in_fresh_cache(environ: dict[str, str] | None = None) -> bool:
    """Whether this process compiles in empty caches of its own: `fresh_compile_cache` pointed the cache
    variables into the folder it marked (a user's cache that merely has a like name is not one)."""
    env = os.environ if environ is None else environ
    mark = env.get(FRESH_MARK)
    return bool(mark) and all(env.get(var) == path for var, path in cache_dirs(Path(mark)).items())


def remove_fresh_caches(folder: Path) -> None:
    """The empty-cache folders the check and timing processes made in a run folder (or a node's folder in
    it, where a rank's reports go), once they have all ended: each removes its own at exit, but one killed
    after it wrote its report (a node's agent stopped when another failed) leaves it, and the run folder
    would be stored with it. Best effort: a folder gone meanwhile (a rank of another node still exiting)
    is no error."""
    try:
        found = [*folder.glob(FRESH_PREFIX + "*"), *folder.glob(f"*/{FRESH_PREFIX}*")]
    except OSError:
        return
    for path in found:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def kept_compile_cache(folder: Path | None) -> Iterator[None]:
    """Inductor's and Triton's caches in `folder` (its inductor/ and triton/) for every process started
    meanwhile, the environment restored after; None: nothing changes. A gate after a gate then finds its
    first processes' compiles (and max-autotune's choices) done: on an H200 the whole book took 463 s
    instead of ~11 min (benchmarks/results/gate_cost_h200.md, before 6d84cc2); a further process, which
    confirms or chases a verdict, still compiles anew in an empty cache of its own. The run folders then
    index no generated code (the cache is the user's, collect.code.generated) and each run says
    `compile_cache` "kept between runs"."""
    if folder is None:
        yield
        return
    try:
        made_writable(map(Path, cache_dirs(folder).values()))
    except OSError as exc:
        raise OutputError(f"the compile cache {folder} cannot be made or written ({exc.strerror or exc}): "
                          "give --compile-cache a folder you can write") from None
    with environment(cache_dirs(folder)):
        yield


def compile_cache_kind(fresh: bool, environ: Mapping[str, str] | None = None, fresh_further: bool = False) -> str:
    """What a run's `compile_cache` says: each process its own empty one (a recording), one the user
    pointed at ($TORCHINDUCTOR_CACHE_DIR or $TRITON_CACHE_DIR: kept between runs, so the first process's
    compiles may be an earlier run's), the run's own for the first process and an empty one for each
    further (`fresh_further`: a gate), else the run's own, shared by its processes."""
    env = os.environ if environ is None else environ
    if fresh:
        return FRESH_COMPILE_CACHE
    if any(var in env for var in CACHE_VARS):
        return KEPT_COMPILE_CACHE
    return FRESH_AFTER_FIRST if fresh_further else SHARED_COMPILE_CACHE


def compile_info(fresh: bool, fresh_further: bool, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What run.json says of its compiles: `compile_cache` (`compile_cache_kind`), and `triton_binaries`
    where its processes compiled through a gate's binary store, whose found binaries cost its first calls
    no Triton compile (collect.code.binary_store)."""
    env = os.environ if environ is None else environ
    kept = binaries_kind(env)
    return {"compile_cache": compile_cache_kind(fresh, env, fresh_further=fresh_further),
            **({"triton_binaries": kept} if kept else {})}
