"""Per-group reductions joined into one array, planned as ONE grouped
reduction.

xarray's own group-by (`ds.groupby(g).mean(dim)` with use_flox=False, or
without flox installed) selects each group (`x[..., idx_g]`), reduces it
(`nanmean(axis)`) and joins the results (`concat` of `r_g[None]`, or
`stack`): for G groups, G selections and G reductions, each reading the
array again. When every joined array is the same reduction over one axis
of the same elementwise expression (NaN masks, casts) of a selection of
one array along that axis, with disjoint index sets, the join is the
grouped reduction of that expression on the whole array (`groupby_reduce_ex`, a
map-reduce over the group axis; labels g on the elements of idx_g, -1 on
the others), with the group axis moved to where the join puts it. Values
are the same: every group holds the same elements, reduced by the same
statistic with the same NaN rule and ddof, in the join's dtype.

The arrays are recognised from their records (_recipe.py): how each handle
was made. A join of anything else is left as it is.

Below strata.Array: handles in, a handle (or None) out.
"""
import numpy as np

from ._core import _strata

# The engine's reductions that are a grouped reduction's statistic: name ->
# (groupby func, skips NaN). arg* (positions within the selection), any/all,
# prod (the engine's groupby has none) and the quantiles are not.
_STATISTICS = {
    "sum": ("sum", False), "mean": ("mean", False),
    "min": ("min", False), "max": ("max", False), "var": ("var", False),
    "std": ("std", False),
    "nansum": ("sum", True), "nanmean": ("mean", True),
    "nanmin": ("min", True), "nanmax": ("max", True), "nanvar": ("var", True),
    "nanstd": ("std", True),
}


def _call(h):
    """The recorded engine call that made handle h (None: not recorded, or
    one output of several)."""
    made = getattr(h, "_recipe", None)
    if made is None or made.item is not None or not made.call.given:
        return None
    return made.call


def _is_full(k):
    return isinstance(k, slice) and k.start is None and k.stop is None and k.step in (None, 1)


def _position(key, i, ndim):
    """The axis term i of `key` (full slices, one Ellipsis at most) stands
    for, in an array of rank ndim."""
    if Ellipsis in key and key.index(Ellipsis) < i:
        return ndim - (len(key) - i)
    return i


def _strip_noop(h):
    """h without the subscripts that select everything (x[:, ...])."""
    while True:
        c = _call(h)
        if c is None or c.fn != "subscript" or not isinstance(c.given[1], tuple):
            return h
        if not all(_is_full(k) or k is Ellipsis for k in c.given[1]):
            return h
        h = c.given[0]


def _new_axis(h):
    """(r, k) when h is r with one new axis inserted at k (r[..., None, ...]
    or expand_dims(r, k)); None otherwise."""
    c = _call(h)
    if c is None:
        return None
    if c.fn == "expand_dims" and len(c.given) == 2:
        return c.given[0], int(c.given[1]) % len(h.shape)
    if c.fn != "subscript" or not isinstance(c.given[1], tuple):
        return None
    key = c.given[1]
    if sum(k is None for k in key) != 1 or sum(k is Ellipsis for k in key) > 1:
        return None
    if not all(k is None or k is Ellipsis or _is_full(k) for k in key):
        return None
    return c.given[0], _position(key, key.index(None), len(h.shape))


def _selection(h):
    """(x, axis, indices) when h is x selected along one axis by a slice or
    by a 1-d integer array made from numpy data (x[..., idx, ...]); None
    otherwise."""
    c = _call(h)
    if c is None or c.fn not in ("subscript", "index") or len(c.given) != 2:
        return None
    x, key = c.given
    if not isinstance(key, tuple) or sum(k is Ellipsis for k in key) > 1:
        return None
    ndim = len(x.shape)
    if len(key) - (Ellipsis in key) > ndim:
        return None
    chosen = [i for i, k in enumerate(key) if not (_is_full(k) or k is Ellipsis)]
    if len(chosen) != 1:
        return None
    i = chosen[0]
    axis = _position(key, i, ndim)
    n = x.shape[axis]
    k = key[i]
    if isinstance(k, slice):
        start, stop, step = k.indices(n)
        if step != 1:
            return None
        return x, axis, np.arange(start, stop, dtype=np.int64)
    made = _call(k) if isinstance(k, _strata.Array) else None
    if made is None or made.fn != "asarray" or not isinstance(made.given[0], np.ndarray):
        return None
    idx = made.given[0]
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        return None
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + n, idx)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        return None
    return x, axis, idx


# Engine calls that act element by element on their array arguments, so that
# on a selection they are the selection of the same call on the whole array
# (xarray's NaN-skipping sum: where(isnan(x[idx]), 0, x[idx]), then sum).
# The *_like calls take the shape of their argument: only without chunks.
_ELEMENTWISE = {"unary", "binary", "where", "astype", "zeros_like", "ones_like", "full_like",
                "empty_like"}


class _Selected:
    """A selection found under a reduction: the selected array, the axis and
    the indices."""

    def __init__(self, x, axis, idx):
        self.x, self.axis, self.idx = x, axis, idx


def _shape_of(h, found):
    """(signature, lifted call) of h: an elementwise expression whose every
    array leaf is one selection (appended to `found`); None otherwise. The
    signature is the same for the same expression over selections of the
    same array along the same axis, whatever the indices; lifted(x) makes
    the expression again with x in place of the selection."""
    sel = _selection(_strip_noop(h))
    if sel is not None:
        found.append(_Selected(*sel))
        return ("selection", sel[0].name, sel[1]), lambda x: x
    c = _call(h)
    if c is None or c.fn not in _ELEMENTWISE or c.kwargs:
        return None
    if c.fn.endswith("_like") and c.given[-1] is not None:
        return None  # chunks given for the selection's shape
    parts, makers = [], []
    for a in c.given:
        if isinstance(a, _strata.Array):
            sub = _shape_of(a, found)
            if sub is None:
                return None
            parts.append(sub[0])
            makers.append(sub[1])
        elif isinstance(a, (bool, int, float, complex, str, type(None), np.generic)):
            parts.append(("value", type(a).__name__, repr(a)))
            makers.append(a)
        else:
            return None
    fn = getattr(_strata, c.fn)

    def lifted(x):
        return fn(*(m(x) if callable(m) else m for m in makers))
    return (c.fn, tuple(parts)), lifted


def _group_reduction(r):
    """(signature, lifted, statistic, selection, ddof, split_every) when r is
    one engine reduction, over exactly the selected axis, of an elementwise
    expression of one selection; None otherwise."""
    c = _call(r)
    if c is None or c.fn != "reduce" or len(c.given) != 6:
        return None
    name, y, axes, keepdims, split_every, ddof = c.given
    if name not in _STATISTICS or keepdims or axes is None or len(axes) != 1:
        return None
    found = []
    shape = _shape_of(y, found)
    if shape is None:
        return None
    first = found[0]
    for f in found[1:]:
        if f.x.name != first.x.name or f.axis != first.axis or \
                not np.array_equal(f.idx, first.idx):
            return None  # two selections under one reduction
    if int(axes[0]) % len(y.shape) != first.axis:
        return None
    signature = (shape[0], name, int(ddof), int(split_every))
    return signature, shape[1], name, first, int(ddof), int(split_every)


def _grouped(pieces, k, joined_shape, dtype):
    """The grouped reduction equal to joining `pieces` (per-group
    reductions, each joined as one position along axis k), or None."""
    if len(pieces) < 2:
        return None
    found = [_group_reduction(r) for r in pieces]
    if any(f is None for f in found) or len({f[0] for f in found}) != 1:
        return None
    _, lifted, name, sel, ddof, split_every = found[0]
    x, axis = sel.x, sel.axis
    n = x.shape[axis]
    labels = np.full(n, -1, dtype=np.int64)
    for g, f in enumerate(found):
        idx = f[3].idx
        if idx.size == 0 or (labels[idx] != -1).any() or np.unique(idx).size != idx.size:
            return None  # an empty group, or groups that share elements
        labels[idx] = g
    y = lifted(x)
    func, skips = _STATISTICS[name]
    floating = np.dtype(y.dtype).kind in "fc"
    r = _strata.groupby_reduce_ex(y, [int(v) for v in labels], axis, func, len(pieces),
                                  skips and floating, ddof, split_every)
    if axis != k:
        r = _strata.moveaxis(r, [axis], [k])
    if r.dtype != dtype:
        r = _strata.astype(r, dtype)
    if tuple(r.shape) != tuple(joined_shape):
        return None
    return r


def concat(handles, axis):
    """concat(handles, axis) as one grouped reduction when the handles are
    per-group reductions with a new axis at `axis` (see the module comment);
    None otherwise."""
    if len(handles) < 2:
        return None
    ndim = len(handles[0].shape)
    if not -ndim <= axis < ndim:
        return None
    k = axis % ndim
    pieces = []
    for h in handles:
        found = _new_axis(h)
        if found is None or found[1] != k:
            return None
        pieces.append(found[0])
    shape = list(handles[0].shape)
    shape[k] = len(handles)
    return _grouped(pieces, k, shape, handles[0].dtype)


def stack(handles, axis):
    """stack(handles, axis) as one grouped reduction when the handles are
    per-group reductions; None otherwise."""
    if len(handles) < 2:
        return None
    ndim = len(handles[0].shape) + 1
    if not -ndim <= axis < ndim:
        return None
    k = axis % ndim
    shape = list(handles[0].shape)
    shape.insert(k, len(handles))
    return _grouped(list(handles), k, shape, handles[0].dtype)
