"""The Array API's sorting functions."""
import operator

from .._core import _strata
from .array_object import _wrap, as_array


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """Sorted along axis (NaN last; descending: NaN first, stable). The axis
    is made one chunk when it fits allowed_mem; otherwise ValueError naming
    the axis and the budget."""
    x = as_array(x, "sort")
    return _wrap(_strata.sort(x._h, operator.index(axis), bool(descending), bool(stable)))


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    x = as_array(x, "argsort")
    return _wrap(_strata.argsort(x._h, operator.index(axis), bool(descending), bool(stable)))
