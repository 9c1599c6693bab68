"""The Array API's set functions (unique_*) and numpy's isin. The unique_*
functions compute eagerly: the result's shape is the data's."""
from collections import namedtuple

from .._core import _strata
from .array_object import _wrap, as_array
from .searching_functions import array_or_scalar


UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])


UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


UniqueAllResult = namedtuple("UniqueAllResult",
                             ["values", "indices", "inverse_indices", "counts"])


def unique_values(x, /):
    """Sorted unique values (every NaN distinct). Computes eagerly."""
    return _wrap(_strata.unique_values(as_array(x, "unique_values")._h))


def unique_counts(x, /):
    v, c = _strata.unique_counts(as_array(x, "unique_counts")._h)
    return UniqueCountsResult(_wrap(v), _wrap(c))


def unique_inverse(x, /):
    v, i = _strata.unique_inverse(as_array(x, "unique_inverse")._h)
    return UniqueInverseResult(_wrap(v), _wrap(i))


def unique_all(x, /):
    v, i, inv, c = _strata.unique_all(as_array(x, "unique_all")._h)
    return UniqueAllResult(_wrap(v), _wrap(i), _wrap(inv), _wrap(c))


def isin(x1, x2, /, *, invert=False):
    """True where an element of x1 is in x2 (bool, x1's shape)."""
    a = as_array(x1, "isin")
    b = array_or_scalar(x2, a, "isin")
    return _wrap(_strata.isin(a._h, b._h, bool(invert)))
