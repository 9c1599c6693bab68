"""`obj.strata.groupby(group)`: xarray's GroupBy reductions, each lowered
to one strata grouped reduction per variable."""
import numpy as np
import pandas as pd
import xarray as xr

import strata
from ..array_api.array_object import Array


class StrataGroupBy:
    """`obj.strata.groupby(group)`: the reductions of xarray's GroupBy,
    each lowered to one grouped reduction over the group dimension per
    variable (strata.groupby_reduce: one op, flox's map-reduce), never one
    getitem and one reduction per group. The group labels (a 1-d coordinate
    or DataArray, or a virtual variable such as "time.month") are read in
    memory, as xarray reads them; groups are their sorted unique values;
    NaN labels belong to no group. Results equal xarray's
    `obj.groupby(group).<func>()` (skipna as xarray: True for floats)."""

    _FUNCS = ("sum", "mean", "count", "min", "max", "std", "var")

    def __init__(self, obj, group):
        if not isinstance(obj, (xr.DataArray, xr.Dataset)):
            raise TypeError(f"groupby: expected a DataArray or Dataset, got "
                            f"{type(obj).__name__}")
        self._obj = obj
        if isinstance(group, str):
            try:
                g = obj[group]
            except KeyError:
                raise KeyError(f"groupby: {group!r} is not a variable, coordinate or virtual "
                               "variable of this object") from None
        elif isinstance(group, xr.DataArray):
            g = group
        else:
            raise TypeError(f"groupby: group must be a name or a DataArray, got "
                            f"{type(group).__name__}")
        if g.ndim != 1:
            raise NotImplementedError(f"groupby: a {g.ndim}-d group is not supported (1-d "
                                      "labels along one dimension)")
        self._dim = g.dims[0]
        if self._dim not in obj.dims:
            raise ValueError(f"groupby: the group's dimension {self._dim!r} is not a dimension "
                             "of the object")
        if g.sizes[self._dim] != obj.sizes[self._dim]:
            raise ValueError(f"groupby: the group has {g.sizes[self._dim]} labels for dimension "
                             f"{self._dim!r} of size {obj.sizes[self._dim]}")
        self._name = g.name if g.name is not None else "group"
        if isinstance(g.variable._data, Array):
            labels = np.asarray(strata.compute(g.variable._data)[0])
        else:
            labels = np.asarray(g.values)
        codes, uniques = pd.factorize(labels, sort=True)
        self._codes = codes.astype(np.int64)
        self._uniques = np.asarray(uniques)
        if len(self._uniques) == 0:
            raise ValueError("groupby: the group has no labels that are not NaN")

    def __repr__(self):
        return (f"StrataGroupBy, grouped over {self._name!r} ({len(self._uniques)} groups "
                f"along {self._dim!r})")

    @property
    def groups(self):
        return {u: np.flatnonzero(self._codes == i) for i, u in enumerate(self._uniques)}

    def sum(self, dim=None, *, skipna=None, keep_attrs=None):
        return self._reduce("sum", dim, skipna, keep_attrs)

    def mean(self, dim=None, *, skipna=None, keep_attrs=None):
        return self._reduce("mean", dim, skipna, keep_attrs)

    def count(self, dim=None, *, keep_attrs=None):
        return self._reduce("count", dim, None, keep_attrs)

    def min(self, dim=None, *, skipna=None, keep_attrs=None):
        return self._reduce("min", dim, skipna, keep_attrs)

    def max(self, dim=None, *, skipna=None, keep_attrs=None):
        return self._reduce("max", dim, skipna, keep_attrs)

    def std(self, dim=None, *, skipna=None, ddof=0, keep_attrs=None):
        return self._reduce("std", dim, skipna, keep_attrs, ddof)

    def var(self, dim=None, *, skipna=None, ddof=0, keep_attrs=None):
        return self._reduce("var", dim, skipna, keep_attrs, ddof)

    # ---------------------------------------------------------------- lowering

    def _dims(self, dim):
        if dim is None or dim is ...:
            return [self._dim] if dim is None else list(self._obj.dims)
        dims = [dim] if isinstance(dim, str) else list(dim)
        for d in dims:
            if d not in self._obj.dims:
                raise ValueError(f"groupby: {d!r} is not a dimension of the object")
        if self._dim not in dims:
            raise ValueError(f"groupby: the reduction must include the group dimension "
                             f"{self._dim!r}, got {dims}")
        return dims

    def _reduce(self, func, dim, skipna, keep_attrs, ddof=0):
        dims = self._dims(dim)
        keep = True if keep_attrs is None else bool(keep_attrs)
        obj = self._obj
        if isinstance(obj, xr.DataArray):
            var = self._reduce_variable(obj.variable, func, dims, skipna, ddof, keep, first=False)
            coords = self._coords(dims)
            return xr.DataArray(var, coords=coords, name=obj.name,
                                attrs=obj.attrs if keep else {})
        data_vars = {}
        for name, v in obj.data_vars.items():
            data_vars[name] = self._reduce_variable(v.variable, func, dims, skipna, ddof, keep,
                                                    first=True)
        return xr.Dataset(data_vars, coords=self._coords(dims), attrs=obj.attrs if keep else {})

    def _coords(self, dims):
        out = {self._name: xr.Variable(self._name, self._uniques)}
        for k, c in self._obj.coords.items():
            if k == self._name or any(d in dims for d in c.dims):
                continue
            out[k] = c.variable
        return out

    def _reduce_variable(self, v, func, dims, skipna, ddof, keep, first):
        G = len(self._uniques)
        if self._dim not in v.dims:
            # As xarray: a variable without the group dimension is the same
            # in every group.
            x = v._data if isinstance(v._data, Array) else strata.asarray(np.asarray(v.values))
            x = strata.broadcast_to(strata.expand_dims(x, axis=0), (G,) + x.shape)
            return xr.Variable((self._name,) + v.dims, x, v.attrs if keep else {})
        x = v._data if isinstance(v._data, Array) else strata.asarray(np.asarray(v.values))
        axis = v.dims.index(self._dim)
        other = tuple(v.dims.index(d) for d in dims if d != self._dim and d in v.dims)
        r = grouped_reduce(x, self._codes, axis, G, func, skipna, ddof, other)
        out_dims = [d for i, d in enumerate(v.dims) if i not in other]
        out_dims[out_dims.index(self._dim)] = self._name
        var = xr.Variable(tuple(out_dims), r, v.attrs if keep else {})
        if first:
            # xarray's Dataset groupby puts the group dimension first.
            var = var.transpose(self._name, *[d for d in out_dims if d != self._name])
        return var


def _has_skipna_groupby():
    import inspect
    try:
        return "skipna" in inspect.signature(strata.groupby_reduce).parameters
    except (TypeError, ValueError):
        return False


def grouped_reduce(x, codes, axis, num_groups, func, skipna=None, ddof=0, other_axes=()):
    """func of x by group along `axis` (labels `codes`, -1 for none), then
    over `other_axes`, with xarray's skipna default: ONE strata grouped
    reduction. With strata's NaN-aware groupby_reduce it is that
    op; otherwise NaN-skipping statistics are sums (or a max/min) of a few
    stacked elementwise terms, which are still one grouped op:
      mean = sum(x, NaN as 0) / count, count = sum(not NaN),
      var  = (sum(d^2) - sum(d)^2 / n) / (n - ddof), d = x - nanmean(x)
             (centred first, against cancellation), in float64,
      max  = max(x with NaN as -inf) and max(0 or -inf if NaN) together,
             the second telling all-NaN groups (NaN, as xarray) apart."""
    if func not in StrataGroupBy._FUNCS:
        raise ValueError(f"groupby: unknown reduction {func!r}")
    floating = x.dtype.kind in "fc"
    skip = floating if skipna is None else (bool(skipna) and floating)
    ax = axis % x.ndim
    labels = codes
    if func in ("sum", "mean", "min", "max", "std", "var") and x.dtype == np.bool_:
        x = strata.astype(x, np.int64)

    def group(y, op):
        return strata.groupby_reduce(y, labels, axis=ax, func=op, num_groups=num_groups)

    def over_other(y, op):
        if not other_axes:
            return y
        return getattr(strata, op)(y, axis=tuple(other_axes))

    if _has_skipna_groupby() and not other_axes:
        # strata's NaN-aware groupby_reduce (issue 16): the one op itself,
        # in xarray's result dtypes (count int64, statistics x's float dtype).
        r = strata.groupby_reduce(x, labels, axis=ax, func=func, num_groups=num_groups,
                                  skipna=skip, **({"ddof": ddof} if func in ("std", "var")
                                                   else {}))
        want = np.dtype(np.int64) if func == "count" else (
            x.dtype if floating else (np.dtype(np.float64) if func in ("mean", "std", "var")
                                      else None))
        if want is not None and r.dtype != want:
            r = strata.astype(r, want)
        return r
    s = strata
    if func == "count":
        valid = s.logical_not(s.isnan(x)) if floating else s.ones_like(x, dtype=np.bool_)
        return over_other(group(s.astype(valid, np.int64), "sum"), "sum")
    if func in ("sum", "mean", "std", "var"):
        acc = np.float64 if floating or func != "sum" else None
        if floating and x.dtype.kind == "c":
            acc = np.complex128
        nan = s.isnan(x) if floating else None
        if func == "sum" and not floating:
            return over_other(group(x, "sum"), "sum")
        if not skip and func == "sum":
            return over_other(group(x, "sum"), "sum")
        xf = s.astype(x, acc) if x.dtype != acc else x
        if skip:
            zero = s.where(nan, 0.0, xf)
            n = s.astype(s.logical_not(nan), acc)
        else:
            zero = xf
            n = s.ones_like(xf)
        if func == "sum":
            return over_other(group(zero, "sum"), "sum")
        if func == "mean":
            both = group(s.stack([zero, n], axis=x.ndim), "sum")
            both = over_other(both, "sum")
            total, count = both[..., 0], both[..., 1]
            r = total / count
            return r if r.dtype == x.dtype or not floating else s.astype(r, x.dtype)
        # var/std: centred on the (NaN-aware) mean over the whole array, one
        # lazy reduction that is not per group.
        centre = s.mean(zero) / s.mean(n)
        d = s.where(nan, 0.0, xf - centre) if skip else xf - centre
        three = group(s.stack([d, d * d, n], axis=x.ndim), "sum")
        three = over_other(three, "sum")
        s1, s2, cnt = three[..., 0], three[..., 1], three[..., 2]
        var = (s2 - s1 * s1 / cnt) / (cnt - ddof)
        var = s.where(cnt - ddof <= 0, np.nan, s.maximum(var, 0.0))
        r = var if func == "var" else s.sqrt(var)
        return r if not floating or r.dtype == x.dtype else s.astype(r, x.dtype)
    # min / max
    if not skip:
        return over_other(group(x, func), func)
    bad = -np.inf if func == "max" else np.inf
    nan = s.isnan(x)
    filled = s.where(nan, bad, x)
    flag = s.where(nan, bad, s.zeros_like(x))
    both = over_other(group(s.stack([filled, flag], axis=x.ndim), func), func)
    value, seen = both[..., 0], both[..., 1]
    return s.where(seen == bad, np.nan, value)
