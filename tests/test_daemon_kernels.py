"""The daemon loads its model's compiled kernels before the first poll, not inside it."""

import subprocess
import sys

CHECK = """
import sys
from river.naive_bayes import GaussianNB
import stream_nb
from stream_nb.daemon import load_kernels
load_kernels(GaussianNB())
print("numba" in sys.modules)
load_kernels(stream_nb.NaiveBayes())
from stream_nb.kernels import compiled
print("numba" in sys.modules, bool(compiled().naive_block.signatures), bool(compiled().flat_columns.signatures))
"""


def test_load_kernels_readies_a_stream_nb_model_and_leaves_others_alone():
    """A river model does not make the daemon import numba; a stream_nb model has its block kernel and the
    decoder's pass over a poll's JSON ready (machine code for the types they are passed) before any event."""
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True", "True"]
