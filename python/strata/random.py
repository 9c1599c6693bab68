"""strata.random: chunk-independent random arrays (Cubed's cubed.random).

Each element is a function of its flat index and the seed, so the same seed
gives the same values in any chunking, worker count or order."""
import secrets

from ._core import _strata, chunks_arg, dtype_name, shape_tuple, spec_arg
from .array_api.array_object import _wrap


def _seed(seed):
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TypeError(f"seed must be a non-negative int, got {seed!r}")
    return seed


def random(size, *, chunks="auto", spec=None, seed=None):
    """Uniform float64 values in [0, 1)."""
    s = shape_tuple(size, "random: size")
    return _wrap(_strata.random(s, chunks_arg(chunks, len(s)), _seed(seed), spec_arg(spec)))


def integers(low, high, size, *, dtype="int64", chunks="auto", spec=None, seed=None):
    """Uniform integers in [low, high)."""
    s = shape_tuple(size, "integers: size")
    return _wrap(_strata.integers(int(low), int(high), s, chunks_arg(chunks, len(s)),
                                  _seed(seed), dtype_name(dtype), spec_arg(spec)))
