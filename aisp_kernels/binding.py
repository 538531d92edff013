"""One ctypes binding for a pair's CUDA library: what it exports, said once, built on first use.

Each CUDA pair used to repeat the same lines: build and load its .cu, set argtypes and restype
per exported function, set up the error-string function, and turn a non-zero cudaError return
into a RuntimeError. A `CudaLibrary` value says all of that as data. Describing a library builds
nothing, so a pair module stays free of import side effects and a variant can refuse CPU
tensors before it spends minutes in nvcc; the first `load()`, `fn()` or `call()` builds (cached
by aisp_kernels.build) and loads it, once per description.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aisp_prof.errors import AispError, RequirementError

from . import build

# (argtypes, restype) of one exported C function, as ctypes types
Signature = tuple[Sequence[Any], Any]

ERROR_STRING_SIGNATURE: Signature = ((ctypes.c_int,), ctypes.c_char_p)   # const char* f(int)
CUDA_ERROR_NOT_SUPPORTED = 801                  # cudaErrorNotSupported


@dataclass(frozen=True, eq=False)
class CudaLibrary:
    """A pair's CUDA C++ source and the C functions the pair calls in it.

    `functions` maps each exported name to its (argtypes, restype); `error_string` names the
    `const char* (int)` function that decodes a cudaError. `include_dirs` entries are paths or
    zero-argument functions returning one or a list of them, called only when the library is
    built (CUTLASS's headers are looked for then, not on import). `arch` None: the current
    GPU's (build.default_arch). `parts` > 1: nvcc compiles the source in that many parts at once on
    a machine with the cores for it (kernels/common/build_parts.h says how a source splits its kernels).
    """

    source: Path
    functions: Mapping[str, Signature]
    error_string: str = "aisp_cuda_error_string"
    arch: str | None = None
    include_dirs: Sequence[Path | str | Callable[[], Path | list[Path]]] = ()
    extra_flags: Sequence[str] = ()
    parts: int = 1
    _lib: ctypes.CDLL | None = field(default=None, init=False, repr=False)

    def _include_dirs(self) -> list[Any]:
        return [path for d in self.include_dirs for path in _paths(d() if callable(d) else d)]

    def _parts(self) -> dict[str, int]:
        return {"parts": self.parts} if self.parts != 1 else {}    # one part: the call it always was

    def parts_here(self) -> int:
        """The parts nvcc builds it in on this machine (build.parts_here: one on a small machine)."""
        return build.parts_here(self.parts)

    def needs_build(self) -> bool:
        """Whether loading it here would run nvcc first (not loaded, not in the build cache).
        False where that cannot be told (no nvcc, no CUTLASS headers): the build says why."""
        if self._lib is not None:
            return False
        try:
            return not build.cached_target(self.source, self.arch, self._include_dirs(), self.extra_flags,
                                           self.parts).is_file()
        except (AispError, OSError):
            return False

    def build(self) -> Path:
        """Build the library into the build cache (or find it there) without loading it: the very
        build `load()` runs first (same source, arch, include dirs and flags: the same cache key).
        The parallel prebuild (aisp_prof.collect.code.prebuild) calls it before anything is timed."""
        return build.build_shared_library(self.source, arch=self.arch, include_dirs=self._include_dirs(),
                                          extra_flags=list(self.extra_flags), **self._parts())

    def load(self) -> ctypes.CDLL:
        """Build (or reuse) and load the library, with every declared signature set; once."""
        if self._lib is None:
            lib = build.load_library(self.source, arch=self.arch, include_dirs=self._include_dirs(),
                                     extra_flags=list(self.extra_flags), **self._parts())
            for name, (argtypes, restype) in {**self.functions, self.error_string: ERROR_STRING_SIGNATURE}.items():
                fn = getattr(lib, name)
                fn.argtypes, fn.restype = list(argtypes), restype
            object.__setattr__(self, "_lib", lib)     # frozen: the one cached handle
        return self._lib

    def fn(self, name: str) -> Any:
        """The ctypes function `name`, with its declared argtypes and restype (builds on first use)."""
        if name not in self.functions:
            raise KeyError(f"{name} is not declared for {Path(self.source).name} "
                           f"(declared: {', '.join(self.functions)})")
        return getattr(self.load(), name)

    def check(self, err: int, what: str) -> None:
        """RuntimeError "<what> failed: <CUDA error text> (cudaError N)" unless `err` is 0."""
        if err != 0:
            text = getattr(self.load(), self.error_string)(err)
            message = text.decode(errors="replace") if text else "unknown error"
            raise RuntimeError(f"{what} failed: {message} (cudaError {err})")

    def require(self, name: str, needs: str) -> None:
        """Ask the zero-argument C query `name` whether this GPU can run something: it returns 0
        when it can and cudaErrorNotSupported when it cannot (RequirementError(`needs`): the pair
        is skipped with that reason); any other code is a failure (see `check`)."""
        err = self.fn(name)()
        if err == CUDA_ERROR_NOT_SUPPORTED:
            raise RequirementError(needs)
        self.check(err, name)

    def call(self, name: str, *args: Any, label: str | None = None) -> None:
        """Call `name`, which returns a cudaError code, and raise (see `check`) if it is not 0.

        `label` replaces the function's name in the message (e.g. to say which configuration)."""
        self.check(self.fn(name)(*args), label or name)


def _paths(found: Any) -> list[Any]:
    return list(found) if isinstance(found, (list, tuple)) else [found]
