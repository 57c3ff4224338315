"""Arrays by address, inside compiled code (imports numba: loaded by :func:`~stream_nb.kernels.compiled` only,
which compiles the functions of ``__all__``).

A model hands its count arrays over as one int64 array of their addresses and shapes
(:class:`~stream_nb.kernels.Addresses`), sparing numba's dispatch per array; the kernel views them here.
"""

from __future__ import annotations

from numba import carray, types
from numba.extending import intrinsic

__all__ = ["f8_1d", "f8_2d", "i8_1d"]


@intrinsic
def _f8(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))

    return types.CPointer(types.float64)(types.int64), codegen


@intrinsic
def _i8(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.int64)))

    return types.CPointer(types.int64)(types.int64), codegen


def f8_1d(addr, n):
    """The float64 array of ``n`` at ``addr``."""
    return carray(_f8(addr), n)


def f8_2d(addr, n0, n1):
    """The C-ordered float64 array of shape (n0, n1) at ``addr``."""
    return carray(_f8(addr), (n0, n1))


def i8_1d(addr, n):
    """The int64 array of ``n`` at ``addr``."""
    return carray(_i8(addr), n)
