"""mps_ops.compile_shader: torch.mps.compile_shader's interface on every
backend. On the emulator (Linux) the source is built once into a shared
library (cached on disk by source hash) and its kernels run on CPU tensors."""

from __future__ import annotations

import math

import torch

from . import _C, backend

_libraries: dict = {}


class ShaderFunction:
    def __init__(self, library: int, name: str):
        self._library = library
        self.name = name

    def __call__(self, *args, threads=None, group_size=None, threadgroup_memory=()):
        """Positional tensors bind as buffers at their storage offset, ints as
        int64, floats as float32, lists as arrays. threads defaults to the
        first tensor argument's numel; group_size to what fits the kernel.
        threadgroup_memory (an mps_ops extension): bytes for each
        [[threadgroup(N)]] argument, by index."""
        if threads is None:
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if first is None:
                raise ValueError(f"{self.name}: threads= is needed when no tensor is passed")
            threads = first.numel()
        threads = _dims(threads, "threads")
        if math.prod(threads) == 0:
            return
        group = _dims(group_size, "group_size") if group_size is not None else []
        if any(g == 0 for g in group):
            raise ValueError(f"{self.name}: group_size sizes must be at least 1, got {group_size!r}")
        _C.library_dispatch(self._library, self.name, list(args), threads, group,
                            [int(b) for b in threadgroup_memory])

    def __repr__(self):
        return f"<mps_ops kernel {self.name}>"


def _dims(value, what):
    dims = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    if not 1 <= len(dims) <= 3 or any(d < 0 for d in dims):
        raise ValueError(f"{what} must be 1 to 3 non-negative sizes, got {value!r}")
    return dims


class ShaderLibrary:
    def __init__(self, handle: int):
        self._handle = handle
        self._names = tuple(_C.library_kernels(handle))

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"shader library has no kernel {name!r}; it has {list(self._names)}")
        return ShaderFunction(self._handle, name)

    def __dir__(self):
        return list(self._names)


def compile_shader(source: str) -> ShaderLibrary:
    """Compile Metal Shading Language source; kernels are attributes of the
    result. A source that fails to compile raises SyntaxError with the
    compiler's message and the line in `source`."""
    if not isinstance(source, str):
        raise TypeError(f"compile_shader() expects Metal source as a str, got {type(source).__name__}")
    cached = _libraries.get(source)
    if cached is not None:
        return cached
    library = _libraries[source] = ShaderLibrary(_C.library_load(_library_input(source)))
    return library


def _library_input(source: str) -> str:
    """What the backend's library loader takes for MSL source: the emulator's
    compiled library's path, CUDA's shader key, Metal's the source itself.
    The C ABI's create_shader_library asks this too (csrc/runtime/c_abi.cpp)."""
    if backend == "emulator":
        from . import _shader_build

        return _shader_build.build(source)
    if backend == "cuda":
        from . import _prepass

        # Built ahead by tools/cuda_build.py (test/kernels/): found by key.
        return _prepass.shader_key(source)
    return source


def load_metallib(metallib) -> ShaderLibrary:
    """A compiled .metallib (bytes, or a path to one) as a ShaderLibrary, like
    torch.mps.load_metallib. Needs the Metal backend: the emulator cannot run
    Apple GPU code and raises NotImplementedError (compile the source instead)."""
    if isinstance(metallib, str) or hasattr(metallib, "__fspath__"):
        with open(metallib, "rb") as f:
            metallib = f.read()
    return ShaderLibrary(_C.library_load_metallib(bytes(metallib)))
