"""The `.strata` accessor on DataArray and Dataset (registered when
strata.xarray is imported): compute(), to_memory(), plan(), visualize(),
to_zarr(), to_dataframe(), to_parquet() (_parquet.py), groupby(), ffill(),
bfill()."""
import xarray as xr

import strata
from ..array_api.array_object import Array
from .._group import group_at
from . import _parquet
from ._backend import (_auto_region, _check_region, _consolidate, _json_attrs, _write_group,
                       _write_group_attrs, _write_into_group, _zarr_mode)
from ._chunkmanager import fill
from ._groupby import StrataGroupBy


def _variables(obj):
    """(key, Variable) of every variable of a DataArray or Dataset, the
    DataArray's own data under the key None."""
    if isinstance(obj, xr.DataArray):
        yield None, obj.variable
        for k, v in obj.coords.items():
            yield k, v.variable
    else:
        for k, v in obj.variables.items():
            yield k, v


def _lazy(obj):
    return [(k, v) for k, v in _variables(obj) if isinstance(v._data, Array)]


def _with_data(obj, new):
    """A shallow copy of obj whose variables named in `new` hold new data."""
    out = obj.copy(deep=False)
    if isinstance(out, xr.DataArray):
        for k, data in new.items():
            if k is None:
                out.variable.data = data
            else:
                out._coords[k].data = data
    else:
        for k, data in new.items():
            out.variables[k].data = data
    return out


class _Accessor:
    def __init__(self, obj):
        self._obj = obj

    def _arrays(self):
        pairs = _lazy(self._obj)
        return [k for k, _ in pairs], [v._data for _, v in pairs]

    def compute(self, **kwargs):
        """The object with every strata-backed variable computed, in one
        strata.compute (inputs shared by several variables read once):
        numpy-backed, as xarray's compute() gives for dask."""
        keys, arrays = self._arrays()
        if not arrays:
            return self._obj.copy(deep=False)
        results = strata.compute(*arrays, **kwargs)
        return _with_data(self._obj, dict(zip(keys, results)))

    def to_memory(self, **kwargs):
        """Like Dask's persist(): computes every strata-backed variable now
        (one compute) and returns the object over strata arrays of the
        results in memory, same chunks and spec, so later operations stay
        lazy and start from memory."""
        keys, arrays = self._arrays()
        if not arrays:
            return self._obj.copy(deep=False)
        results = strata.compute(*arrays, **kwargs)
        return _with_data(self._obj, {
            k: strata.asarray(r, chunks=a.chunksize, spec=a.spec)
            for k, a, r in zip(keys, arrays, results)})

    def plan(self):
        """The strata plan of every lazy variable (nothing runs)."""
        keys, arrays = self._arrays()
        if not arrays:
            raise ValueError("plan: this object has no strata-backed variables")
        return strata.plan(*arrays)

    def visualize(self, filename="strata", format=None):
        """Writes the plan of every lazy variable as a picture (strata.visualize);
        returns the file's path."""
        keys, arrays = self._arrays()
        if not arrays:
            raise ValueError("visualize: this object has no strata-backed variables")
        return strata.visualize(*arrays, filename=filename, format=format)

    def to_dataframe(self, *args, **kwargs):
        """A pandas DataFrame equal to xarray's compute().to_dataframe(), with
        its arguments (one compute): _parquet.py."""
        return _parquet.to_dataframe(self._obj, *args, **kwargs)

    def to_parquet(self, path, **kwargs):
        """Writes a Parquet dataset (a directory or s3:// prefix) block by
        block within allowed_mem, published atomically: _parquet.to_parquet."""
        return _parquet.to_parquet(self._obj, path, **kwargs)

    def ffill(self, dim, limit=None):
        """xarray's ffill(dim, limit=) on the strata-backed data variables,
        lazily: xarray sends ffill/bfill of chunked arrays to the chunk
        manager's scan only for Dask arrays (duck_array_ops.push), and runs
        bottleneck on the whole of any other array, so this is the spelling
        for Strata (docs/xarray.md). limit: None, or at most a block along
        dim."""
        return self._fill(dim, limit, backward=False)

    def bfill(self, dim, limit=None):
        """xarray's bfill(dim, limit=), lazily (see ffill)."""
        return self._fill(dim, limit, backward=True)

    def _fill(self, dim, limit, backward):
        obj = self._obj
        if dim not in obj.dims:
            raise ValueError(f"{'bfill' if backward else 'ffill'}: {dim!r} is not a dimension "
                             f"of this object (dimensions: {list(obj.dims)})")
        if isinstance(obj, xr.DataArray):
            targets = [(None, obj.variable)]
        else:
            targets = [(k, obj[k].variable) for k in obj.data_vars]
        return _with_data(obj, {
            k: fill(v._data, v.get_axis_num(dim), limit, backward)
            for k, v in targets if isinstance(v._data, Array) and dim in v.dims})

    def groupby(self, group):
        """Group-by that lowers every reduction to one grouped reduction per
        variable (strata.groupby_reduce), not one op per group."""
        return StrataGroupBy(self._obj, group)


@xr.register_dataarray_accessor("strata")
class StrataDataArrayAccessor(_Accessor):
    """`da.strata`: compute(), to_memory(), plan(), visualize(), to_zarr(),
    groupby()."""

    def to_zarr(self, store, mode=None, *, name=None, **kwargs):
        """Writes the DataArray as a one-variable dataset (Dataset.strata.to_zarr,
        with its mode=, region=, append_dim= and the rest); the variable is
        named `name`, the DataArray's name or xarray's
        "__xarray_dataarray_variable__"."""
        da = self._obj
        name = name or da.name or "__xarray_dataarray_variable__"
        return da.to_dataset(name=name).strata.to_zarr(store, mode=mode, **kwargs)


@xr.register_dataset_accessor("strata")
class StrataDatasetAccessor(_Accessor):
    """`ds.strata`: compute(), to_memory(), plan(), visualize(), to_zarr(),
    groupby()."""

    def to_zarr(self, store, mode=None, *, region=None, append_dim=None, consolidated=True,
                encoding=None, zarr_format=None, codec=None, compute=True, **compute_kwargs):
        """Writes the Dataset to a Zarr group (a path or an s3:// URL) as
        xarray's Dataset.to_zarr does
        (data variables and coordinates, CF-encoded by xarray's encoder:
        _ARRAY_DIMENSIONS or dimension_names, attributes, NaN fill values for
        floats, times as numbers with units), so that xr.open_zarr reads it
        back equal. Every strata-backed and numeric variable is written in one
        strata compute (strings, which strata has no dtype for, through
        zarr-python).

        mode, region and append_dim mean what they mean to xarray's
        Dataset.to_zarr (2026.9: same defaults, checks and error messages):
        - "w-" (the default without region/append_dim: fail if `store`
          exists) or "w" (replace a Zarr group): on a path the group is
          assembled under a temporary name beside `store` and renamed into
          place when complete, so a failed write leaves nothing that looks
          complete. On S3, which cannot rename, it is written in place with
          the group's own metadata last (with "w", the old group's metadata
          is removed first and its other members after the compute); a
          failed write erases everything under the prefix.
        - "a" (the default with append_dim): into an existing group, new
          variables are created, existing ones rewritten with their stored
          encoding (dtype, _FillValue, scale_factor/add_offset, time units);
          the group's attributes are replaced by the dataset's. On a missing
          store (and without region/append_dim) it writes a new group.
        - "a-": as "a", but with append_dim the existing variables without
          that dimension are not rewritten.
        - "r+" (the default with region): existing variables only, attributes
          kept.
        - append_dim="time": variables with that dimension grow along it
          (coordinates too), others are rewritten whole and must match the
          stored sizes. The new shapes are written last.
        - region={"time": slice(10, 20)}: a dict of dimension -> slice (step
          1) of the stored arrays; every variable must have one of its
          dimensions (xarray's error names those to drop_vars); as xarray's,
          the index coordinates are not written. Chunks the region covers
          partly are read, updated and rewritten under a lock per chunk,
          never torn. region="auto" (or "auto" for some dimensions): where
          the dataset's labels are in the stored coordinates, as xarray
          finds it. region together with append_dim is refused
          (NotImplementedError).
        Every check runs before anything is written; if the compute then
        fails, appended arrays get their old shapes back and created
        variables are removed (values backfilled into a region before the
        failure stay: a region write replaces data in place, as xarray's
        does). Consolidated metadata: written by "w"/"w-" unless
        consolidated is False; rewritten by "a" (with the new shapes) unless
        consolidated is False and the group has none; "r+" changes no
        metadata. (consolidated=None is xarray's default; True here.)

        zarr_format: 2 (default) or 3 for new groups (an existing group keeps
        its own; strings are written in either). encoding: per new
        variable, as xarray's (dtype, scale_factor, add_offset, _FillValue,
        chunks, compressors/filters as numcodecs or zarr-python 3 codecs,
        zarr-python 2's compressor, units/calendar for times); refused for
        variables that exist. What the user names wins over what the data
        kept from where it was read: chunks are encoding=' chunks, else the
        strata array's own (open_zarr(chunks=), .chunk(), a rechunk), else
        the encoding's (data in memory); codecs are encoding=' ones (a codec
        strata cannot write is a ValueError naming it), else codec=
        (strata's codec syntax, default blosc lz4). compute=False is not
        supported (NotImplementedError)."""
        ds = self._obj
        mode = _zarr_mode(mode, region, append_dim)
        if region is not None:
            region = _auto_region(ds, store, region, mode)
            _check_region(ds, region, append_dim)
        if zarr_format not in (None, 2, 3):
            raise ValueError(f"to_zarr: zarr_format must be 2 or 3, got {zarr_format!r}")
        if encoding is not None and not isinstance(encoding, dict):
            raise TypeError("to_zarr: encoding must be a dict of {variable: {key: value}}")
        if consolidated not in (None, True, False):
            raise TypeError(f"to_zarr: consolidated must be None, True or False, got "
                            f"{consolidated!r}")
        consolidated = consolidated is not False   # None: xarray's default, consolidate
        encoding = encoding or {}
        for k in encoding:
            if k not in ds.variables:
                raise ValueError(f"to_zarr: encoding given for {k!r}, which is not a variable "
                                 "of the dataset")
        if not compute:
            raise NotImplementedError("to_zarr(compute=False): not supported yet "
                                      "(the group is assembled when the compute ends)")
        group = group_at(store, "to_zarr")
        if region is not None:
            ds = ds.drop_vars(list(ds.indexes))   # as xarray: a region write keeps the indexes
        if mode in ("a", "a-", "r+") and (mode == "r+" or region is not None or
                                          append_dim is not None or group.exists()):
            _write_into_group(ds, group, mode, region, append_dim, encoding, zarr_format,
                              codec, consolidated, compute_kwargs)
            return None
        zarr_format = zarr_format or 2
        mode = "w-" if mode in ("a", "a-") else mode   # "a" on a missing store: a new group
        names = list(self._obj.variables)

        def write_metadata(node):
            _write_group_attrs(node, zarr_format, _json_attrs(group_attrs))
            if consolidated:
                _consolidate(node, zarr_format, names)
        new = group.new_group(mode)
        try:
            handles, strings, group_attrs = _write_group(ds, new, encoding, zarr_format, codec)
            new.begin()   # every check has passed
            if handles:
                strata.compute(*handles, **compute_kwargs)
            for write in strings:
                write()
            new.commit(write_metadata, names)
        except BaseException:
            new.abort()
            raise
        return None
