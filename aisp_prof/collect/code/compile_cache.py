"""Where a timed process keeps what torch.compile and Triton compiled: by default the machine's
caches, shared by every process; for a recording, an empty folder per process (`fresh_compile_cache`).
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path


def fresh_compile_cache(under: Path | None = None) -> Path:
    """Point Inductor and Triton at an empty folder of this process, removed when it ends, before
    torch is imported: a recording's processes then each compile and autotune anew, as a fresh
    machine does. Sharing one cache, every process of a session reused the first one's choices, so its
    A/A margin saw one draw of them; ch14.regional_triton's max-autotune variants ran 8-10% faster on a
    fresh H200 lease with no code change, outside that margin. `under`: where to make the folder (the
    child's run folder: a process killed outright, whose exit handler never runs, leaves its cache
    there, and a failed or interrupted run's folder goes whole); default the temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="aisp-compile-", dir=under))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(folder / "triton")
    atexit.register(shutil.rmtree, folder, True)
    return folder
