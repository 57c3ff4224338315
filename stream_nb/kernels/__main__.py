"""``python -m stream_nb.kernels``: compile every kernel into numba's cache (a Docker image's build step)."""

import time

from . import compile_all

start = time.perf_counter()
compile_all()
print(f"stream_nb kernels compiled in {time.perf_counter() - start:.1f} s")
