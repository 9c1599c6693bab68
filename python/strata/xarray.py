"""xarray on Strata: `open_zarr`, and the `.strata` accessor on DataArray and
Dataset (importing this module registers it).

    import strata.xarray
    ds = strata.xarray.open_zarr("ifs.zarr", spec=strata.Spec(allowed_mem="2GB"))
    # or "s3://bucket/ifs.zarr" (AWS_* variables, ?endpoint=...: README)
    wind = np.sqrt(ds.u ** 2 + ds.v ** 2)            # lazy strata arrays
    means = wind.strata.groupby("country").mean()     # one grouped reduction
    means.strata.to_zarr("means.zarr")                # one compute

strata.Array is an Array API array (xarray calls the strata namespace's
functions: nan-reductions, einsum, sliding windows, ...) and a NEP-18 duck
array (_numpy_dispatch.py), so xarray keeps it as the data of its variables:
selection (pointwise too), arithmetic, ufuncs, where/fillna, reductions,
concat, dot, weighted, coarsen, rolling, shift stay lazy. strata is also
xarray's chunk manager for its arrays (_chunkmanager.py, imported here):
xarray's own compute()/load()/persist()/to_zarr() run strata, and .chunk()
on a Strata-backed object keeps strata arrays. `.strata.compute()` computes
every variable of the object in one plan (shared inputs read once), as
xarray's compute() does through the chunk manager.

What open_zarr decodes (CF, as xarray's decode_cf does): on coordinates,
everything xarray decodes (they are read eagerly and decoded by xarray
itself: times, masks, scale/offset, bools); on data variables (lazy),
`_FillValue`/`missing_value` to NaN, `scale_factor`/`add_offset`, and
`dtype: bool`. Not decoded on data variables: CF time units (strata has no
datetime dtype: they stay numbers with their `units` attribute), `_Unsigned`
(NotImplementedError) and string/object dtypes (strata has none).
"""
import numpy as np
import pandas as pd
import xarray as xr

import strata
from . import _chunkmanager  # noqa: F401  (also: .chunk() keeps strata arrays)
from ._array import Array
from ._group import group_at

__all__ = ["open_zarr", "chunk_manager", "StrataDataArrayAccessor", "StrataDatasetAccessor",
           "StrataGroupBy"]


def chunk_manager():
    """Strata's xarray chunk manager (an xarray.namedarray.parallelcompat
    ChunkManagerEntrypoint), for `chunked_array_type=` where the entry point
    `strata` is not installed."""
    return _chunkmanager.chunk_manager()


# ============================================================== reading

def _fill_value(raw, dtype):
    """A Zarr metadata fill value as a numpy scalar of `dtype` (None for
    null)."""
    if raw is None:
        return None
    dt = np.dtype(dtype)
    if dt.kind == "f":
        special = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
        return dt.type(special.get(raw, raw) if isinstance(raw, str) else raw)
    if dt.kind == "c":
        re, im = raw
        return dt.type(complex(float(_fill_value(re, np.float64)),
                               float(_fill_value(im, np.float64))))
    if dt.kind in "biu":
        return dt.type(raw)
    return raw


_V3_DTYPES = {"bool": "bool", "int8": "i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
              "uint8": "u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
              "float16": "<f2", "float32": "<f4", "float64": "<f8", "complex64": "<c8",
              "complex128": "<c16"}


def _v3_dtype(name, dt):
    """The numpy dtype of a v3 data_type: strata's numbers, and the strings
    (variable length, fixed_length_utf32) coordinates may hold, which
    zarr-python reads."""
    if isinstance(dt, str) and dt in _V3_DTYPES:
        return np.dtype(_V3_DTYPES[dt])
    if dt in ("string", "variable_length_utf8"):
        return np.dtype(object)
    if isinstance(dt, dict) and dt.get("name") == "fixed_length_utf32":
        return np.dtype(f"<U{int(dt['configuration']['length_bytes']) // 4}")
    raise ValueError(f"open_zarr: array {name!r} has data type {dt!r}, which strata does not "
                     "read")


class _ArrayMeta:
    """One array of a group: its name, dims, dtype, chunks, fill value,
    attributes and codecs, from v2 (.zarray/.zattrs) or v3 (zarr.json)."""

    def __init__(self, name, zarr_format, meta, attrs):
        self.name = name
        self.zarr_format = zarr_format
        self.attrs = dict(attrs or {})
        self.meta = meta
        if zarr_format == 2:
            self.dtype = np.dtype(meta["dtype"])
            self.chunks = tuple(meta["chunks"])
            dims = self.attrs.pop("_ARRAY_DIMENSIONS", None)
        else:
            self.dtype = _v3_dtype(name, meta["data_type"])
            grid = meta.get("chunk_grid", {}).get("configuration", {})
            self.chunks = tuple(grid.get("chunk_shape", meta["shape"]))
            dims = meta.get("dimension_names")
            if dims is None:
                dims = self.attrs.pop("_ARRAY_DIMENSIONS", None)
            else:
                self.attrs.pop("_ARRAY_DIMENSIONS", None)
        self.shape = tuple(meta["shape"])
        if dims is None and self.shape == ():
            dims = ()
        if dims is None or any(d is None for d in dims):
            raise ValueError(
                f"open_zarr: array {name!r} has no dimension names (neither the "
                "_ARRAY_DIMENSIONS attribute of Zarr v2 nor dimension_names of Zarr v3); "
                "xarray needs them")
        if len(dims) != len(self.shape):
            raise ValueError(f"open_zarr: array {name!r} has {len(dims)} dimension names for "
                             f"{len(self.shape)} dimensions")
        self.dims = tuple(dims)
        self.fill_value = _fill_value(meta.get("fill_value"), self.dtype)

    def zarr_array(self):
        """zarr-python's Array of this metadata, over an empty store: its
        codecs, chunks and fill value as zarr-python gives them to xarray
        (nothing is read)."""
        from zarr import Array as ZarrArray
        from zarr.core.array import AsyncArray
        from zarr.core.metadata import ArrayV2Metadata, ArrayV3Metadata
        from zarr.storage import MemoryStore, StorePath
        meta = dict(self.meta)
        if self.zarr_format == 2:
            meta.setdefault("zarr_format", 2)
            metadata = ArrayV2Metadata.from_dict(meta)
        else:
            metadata = ArrayV3Metadata.from_dict(meta)
        return ZarrArray(AsyncArray(metadata=metadata, store_path=StorePath(MemoryStore())))

    def encoding(self):
        """The storage encoding xarray's zarr backend gives the variable."""
        z = self.zarr_array()
        chunks = tuple(z.chunks)
        enc = {"chunks": chunks, "preferred_chunks": dict(zip(self.dims, chunks)),
               "compressors": z.compressors, "filters": z.filters, "shards": z.shards}
        if self.zarr_format == 3:
            enc["serializer"] = z.serializer
            enc["fill_value"] = z.fill_value
        return enc

    def cf_attrs(self):
        """The attributes as xarray's zarr backend hands them to its CF
        decoder: in Zarr v2 the array's fill value is the _FillValue; in v3
        only a _FillValue attribute is, stored encoded (FillValueCoder)."""
        attrs = dict(self.attrs)
        if self.zarr_format == 2:
            if self.fill_value is not None:
                attrs["_FillValue"] = self.fill_value
        elif attrs.get("_FillValue") is not None and self.dtype.kind in "biufcUS":
            from xarray.backends.zarr import FillValueCoder
            attrs["_FillValue"] = FillValueCoder.decode(attrs["_FillValue"], self.dtype)
        return attrs


def _group_metadata(group, consolidated):
    """(zarr_format, group attributes, [_ArrayMeta]) of `group` (a Group):
    from consolidated metadata when present (or required), else from each
    member's own metadata."""
    what = "open_zarr"
    zgroup, zmeta = group.get_json(".zgroup"), group.get_json(".zmetadata")
    if zgroup is not None or zmeta is not None:
        if consolidated is not False and zmeta is not None:
            m = zmeta.get("metadata")
            if not isinstance(m, dict):
                raise ValueError(f"{what}: {group.key_url('.zmetadata')} has no 'metadata' "
                                 "object")
            names = sorted({k.split("/")[0] for k in m if k.endswith("/.zarray") and
                            k.count("/") == 1})
            arrays = [_ArrayMeta(n, 2, m[f"{n}/.zarray"], m.get(f"{n}/.zattrs", {}))
                      for n in names]
            return 2, dict(m.get(".zattrs", {})), arrays
        if consolidated is True:
            raise ValueError(f"{what}: {group.url!r} has no consolidated metadata (.zmetadata); "
                             "pass consolidated=None or False")
        attrs = group.get_json(".zattrs") or {}
        arrays = [_ArrayMeta(n, 2, group.get_json(f"{n}/.zarray"),
                             group.get_json(f"{n}/.zattrs") or {})
                  for n in group.members(".zarray")]
        return 2, attrs, arrays
    g = group.get_json("zarr.json")
    if g is not None:
        if g.get("node_type") != "group":
            raise ValueError(f"{what}: {group.url!r} is a Zarr {g.get('node_type')!r}, not a "
                             "group (use strata.from_zarr for one array)")
        cm = g.get("consolidated_metadata")
        if consolidated is not False and isinstance(cm, dict) and \
                isinstance(cm.get("metadata"), dict):
            arrays = [_ArrayMeta(n, 3, m, m.get("attributes", {}))
                      for n, m in sorted(cm["metadata"].items())
                      if "/" not in n and m.get("node_type") == "array"]
            return 3, dict(g.get("attributes", {})), arrays
        if consolidated is True:
            raise ValueError(f"{what}: {group.url!r} has no consolidated metadata; pass "
                             "consolidated=None or False")
        arrays = []
        for n in group.members("zarr.json"):
            m = group.get_json(f"{n}/zarr.json")
            if m.get("node_type") == "array":
                arrays.append(_ArrayMeta(n, 3, m, m.get("attributes", {})))
        return 3, dict(g.get("attributes", {})), arrays
    if not group.exists():
        raise FileNotFoundError(f"{what}: no Zarr group at {group.url!r}")
    raise ValueError(f"{what}: {group.url!r} is not a Zarr group (no .zgroup, .zmetadata or "
                     "zarr.json)")


def _read_coordinate(group, a, spec):
    """A coordinate's values in memory: through strata for numbers, through
    zarr-python for the strings strata has no dtype for."""
    if a.dtype.kind in "biufc":
        return strata.from_zarr(group.array_url(a.name), spec=spec).compute()
    import zarr
    return zarr.open_array(group.zarr_store(a.name), mode="r", zarr_format=a.zarr_format)[...]


def _pop_to(attrs, encoding, key):
    v = attrs.pop(key, None)
    if v is not None:
        encoding[key] = v
    return v


def _float_dtype(choose, dtype, encoding):
    """xarray's float dtype for scaled data (it looks at the scale and
    offset themselves)."""
    return choose(dtype, encoding)


def _decode_lazy(name, x, attrs, encoding, mask_and_scale):
    """xarray's CF decoding of a data variable (CFMaskCoder,
    CFScaleOffsetCoder, the bool dtype), as lazy strata operations."""
    from xarray.core import dtypes
    from xarray.coding.variables import _choose_float_dtype
    original_dtype = x.dtype
    if mask_and_scale:
        if "_Unsigned" in attrs:
            raise NotImplementedError(f"open_zarr: variable {name!r} has the _Unsigned "
                                      "attribute, which strata does not decode lazily")
        raw = [_pop_to(attrs, encoding, k) for k in ("missing_value", "_FillValue")]
        fills = {fv for option in raw if option is not None for fv in np.ravel(option)
                 if not pd.isnull(fv)}
        if fills:
            dtype, decoded = dtypes.maybe_promote(x.dtype)
            x = x if x.dtype == dtype else strata.astype(x, dtype)
            cond = None
            for fv in sorted(fills):
                c = x == np.asarray(fv).astype(dtype).item()
                cond = c if cond is None else strata.logical_or(cond, c)
            x = strata.where(cond, strata.asarray(np.asarray(decoded, dtype=dtype)), x)
        if "scale_factor" in attrs or "add_offset" in attrs:
            scale = _pop_to(attrs, encoding, "scale_factor")
            offset = _pop_to(attrs, encoding, "add_offset")
            dtype = np.dtype(_float_dtype(_choose_float_dtype, x.dtype, encoding))
            x = x if x.dtype == dtype else strata.astype(x, dtype)
            if scale is not None:
                x = x * float(np.asarray(scale).item())
            if offset is not None:
                x = x + float(np.asarray(offset).item())
    if attrs.get("dtype") == "bool":
        del attrs["dtype"]
        x = strata.astype(x, np.bool_)
    encoding.setdefault("dtype", original_dtype)
    return x


def _rechunk(x, dims, chunks):
    if chunks is None:
        return x
    if isinstance(chunks, (int, np.integer)) or chunks == -1:
        return x.rechunk(tuple(int(chunks) if chunks != -1 else n for n in x.shape))
    if chunks == "auto":
        return x
    if not isinstance(chunks, dict):
        raise TypeError(f"open_zarr: chunks must be None, an int, -1 or a dict of dimension "
                        f"sizes, got {type(chunks).__name__}")
    new = list(x.chunksize)
    changed = False
    for i, d in enumerate(dims):
        if d in chunks and chunks[d] is not None:
            c = chunks[d]
            new[i] = x.shape[i] if c == -1 else int(c)
            changed = True
    return x.rechunk(tuple(new)) if changed and tuple(new) != x.chunksize else x


def open_zarr(store, chunks=None, spec=None, *, group=None, consolidated=None,
              decode_cf=True, mask_and_scale=True, decode_times=True, drop_variables=None):
    """A Zarr group (v2 with _ARRAY_DIMENSIONS, or v3 with dimension_names)
    as an xarray Dataset whose data variables are lazy strata arrays and
    whose coordinates are in memory (decoded by xarray).

    store: a path, `file://` path or `s3://bucket/prefix` URL (S3 settings
    as for strata.from_zarr: AWS_* variables, `?endpoint=...&region=...`).
    FileNotFoundError when nothing is there (or the bucket is missing),
    ValueError for what is not a Zarr group, OSError for an unreachable or
    refusing server.

    chunks: None (the stored chunks, strata's unit of work), an int, -1 or a
    {dim: size} dict (a lazy rechunk). spec: the strata.Spec of every array.
    Consolidated metadata (.zmetadata, or zarr.json's consolidated_metadata)
    is used when present (consolidated=None) or required (True).
    Attributes are kept; encodings hold the stored chunks, codecs, dtype and
    the CF keys decoding moved out of the attributes."""
    root = group_at(store, "open_zarr")
    if group:
        root = root.child(str(group).strip("/"))
    if consolidated not in (None, True, False):
        raise TypeError(f"open_zarr: consolidated must be None, True or False, got "
                        f"{consolidated!r}")
    if spec is not None and not isinstance(spec, strata.Spec):
        raise TypeError(f"open_zarr: spec must be a strata.Spec, got {type(spec).__name__}")
    if isinstance(drop_variables, str):
        drop_variables = [drop_variables]
    drop = set(drop_variables or ())
    zarr_format, group_attrs, arrays = _group_metadata(root, consolidated)
    arrays = [a for a in arrays if a.name not in drop]
    all_dims = {d for a in arrays for d in a.dims}
    coord_names = set()
    group_attrs = dict(group_attrs)
    if decode_cf and "coordinates" in group_attrs:
        coord_names.update(str(group_attrs.pop("coordinates")).split())
    for a in arrays:
        if decode_cf and "coordinates" in a.attrs:
            coord_names.update(str(a.attrs["coordinates"]).split())
    coord_names.update(a.name for a in arrays if a.name in all_dims)
    coord_names &= {a.name for a in arrays}
    coords, data_vars = {}, {}
    for a in arrays:
        attrs = a.cf_attrs()
        encoding = a.encoding()
        if decode_cf and "coordinates" in attrs:
            encoding["coordinates"] = attrs.pop("coordinates")
        if a.name in coord_names:
            # Coordinates: read now, decoded by xarray itself.
            values = _read_coordinate(root, a, spec)
            var = xr.Variable(a.dims, np.asarray(values), attrs, encoding)
            if decode_cf:
                var = xr.conventions.decode_cf_variable(
                    a.name, var, mask_and_scale=mask_and_scale, decode_times=decode_times)
                var = xr.Variable(var.dims, np.asarray(var.values), var.attrs, var.encoding)
            coords[a.name] = var
        else:
            if a.dtype.kind not in "biufc":
                raise TypeError(f"open_zarr: data variable {a.name!r} has dtype {a.dtype}, "
                                "which strata arrays cannot hold (coordinates may be strings: "
                                "they are read into memory); pass drop_variables="
                                f"[{a.name!r}] to open the rest")
            x = strata.from_zarr(root.array_url(a.name), spec=spec)
            if decode_cf:
                x = _decode_lazy(a.name, x, attrs, encoding, mask_and_scale)
            else:
                encoding.setdefault("dtype", x.dtype)
            x = _rechunk(x, a.dims, chunks)
            data_vars[a.name] = xr.Variable(a.dims, x, attrs, encoding)
    return xr.Dataset(data_vars, coords=coords, attrs=group_attrs)


# ============================================================== the accessor

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


def _zarr_mode(mode, region, append_dim):
    """xarray's default mode and its refusals (Dataset.to_zarr)."""
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in ("a", "a-") and append_dim is not None:
        raise ValueError("cannot set append_dim unless mode='a' or mode=None")
    if mode not in ("a", "a-", "r+") and region is not None:
        raise ValueError("cannot set region unless mode='a', mode='a-', mode='r+' or mode=None")
    if mode not in ("w", "w-", "a", "a-", "r+"):
        raise ValueError("The only supported options for mode are 'w', "
                         f"'w-', 'a', 'a-', and 'r+', but mode={mode!r}")
    return mode


def _is_auto(v):
    return isinstance(v, str) and v == "auto"


def _auto_region(ds, store, region, mode):
    """region= with "auto" (for the whole region or some dimensions) as
    xarray resolves it: a dimension with a coordinate is where the
    dataset's labels are in the stored coordinate (contiguous), one without
    is all of it; the same checks and messages as xarray's."""
    if _is_auto(region):
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, dict) or not any(_is_auto(v) for v in region.values()):
        return region
    if mode not in ("r+", "a"):
        raise ValueError(f"``mode`` must be 'r+' or 'a' when using ``region='auto'``, got "
                         f"{mode!r}")
    group = group_at(store, "to_zarr")
    _, _, arrays = _group_metadata(group, consolidated=False)
    stored = {a.name: a for a in arrays}
    region = dict(region)
    for dim, value in region.items():
        if not _is_auto(value):
            continue
        if dim not in ds.variables:
            region[dim] = slice(0, ds.sizes[dim])
            continue
        if dim not in stored:
            raise KeyError(f"to_zarr: region='auto' needs the coordinate {dim!r} in "
                           f"{group.url!r}, which has no such array")
        a = stored[dim]
        raw = xr.Variable(a.dims, np.asarray(_read_coordinate(group, a, None)), a.cf_attrs())
        index = pd.Index(xr.conventions.decode_cf_variable(dim, raw).values)
        idxs = index.get_indexer(ds[dim].data)
        if (idxs == -1).any():
            raise KeyError(f"Not all values of coordinate '{dim}' in the new array were found "
                           "in the original store. Writing to a zarr region slice requires "
                           "that no dimensions or metadata are changed by the write.")
        if (np.diff(idxs) != 1).any():
            raise ValueError(f"The auto-detected region of coordinate '{dim}' for writing new "
                             "data to the original store had non-contiguous indices. Writing "
                             "to a zarr region slice requires that the new data constitute a "
                             "contiguous subset of the original store.")
        region[dim] = slice(int(idxs[0]), int(idxs[-1]) + 1)
    return region


def _check_region(ds, region, append_dim):
    """xarray's checks of region= (its messages), then strata's one limit."""
    if not isinstance(region, dict):
        raise TypeError(f"``region`` must be a dict, got {type(region)}")
    for k, v in region.items():
        if k not in ds.dims:
            raise ValueError("all keys in ``region`` are not in Dataset dimensions, got "
                             f"{list(region)} and {list(ds.dims)}")
        if not isinstance(v, slice):
            raise TypeError(f"all values in ``region`` must be slice objects, got region={region}")
        if v.step not in {1, None}:
            raise ValueError(f"step on all slices in ``region`` must be 1 or None, got "
                             f"region={region}")
    non_matching = [k for k, v in ds.variables.items() if not set(region).intersection(v.dims)]
    if non_matching:
        raise ValueError(
            "when setting `region` explicitly in to_zarr(), all variables in the dataset to "
            "write must have at least one dimension in common with the region's dimensions "
            f"{list(region.keys())}, but that is not the case for some variables here. To "
            "drop these variables from this dataset before exporting to zarr, write: "
            f".drop_vars({non_matching!r})")
    if append_dim is not None:
        if append_dim in region:
            raise ValueError("cannot list the same dimension in both ``append_dim`` and "
                             f"``region`` with to_zarr(), got {append_dim} in both")
        raise NotImplementedError(
            "strata to_zarr: region= with append_dim= (growing an array by a slab that covers "
            "only part of its other dimensions) is not supported; append whole slabs, then "
            "backfill with region=")


def _plain_variable(name, var, encoding):
    """var as an xr.Variable over its strata array (or its values), with
    `encoding`, or ValueError for a name Zarr cannot hold."""
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        raise ValueError(f"to_zarr: variable name {name!r} cannot be a Zarr array name")
    var = var.variable if hasattr(var, "variable") else var
    if not isinstance(var._data, Array):
        from xarray.namedarray.pycompat import is_chunked_array
        if is_chunked_array(var._data):
            raise TypeError(
                f"to_zarr: variable {name!r} holds a {type(var._data).__module__}."
                f"{type(var._data).__name__}, not a strata array; .strata.to_zarr would load "
                "it whole: rechunk with .chunk(chunked_array_type='strata') or write it with "
                "xarray's own to_zarr")
    return xr.Variable(var.dims, var._data if isinstance(var._data, Array) else var.values,
                       var.attrs, encoding)


def _encoded_data(enc):
    """The data of an encoded variable: its strata array, or numpy."""
    return enc._data if isinstance(enc._data, Array) else np.asarray(enc.values)


def _is_strings(data):
    return isinstance(data, np.ndarray) and data.dtype.kind not in "biufc"


def _encode(var, name, zarr_format):
    """var CF-encoded as xarray's zarr backend encodes it (its coders: bools
    and strings stay as Zarr holds them natively)."""
    from xarray.backends.zarr import encode_zarr_variable
    return encode_zarr_variable(var, name=name, zarr_format=zarr_format)


# Encoding keys that say how a variable is stored (not CF): xarray's zarr
# backend's, zarr-python 2's ("compressor"), and what a reader leaves.
_STORAGE_KEYS = ("chunks", "preferred_chunks", "compressor", "compressors", "filters",
                 "serializer", "shards", "fill_value", "codecs", "chunk_key_encoding",
                 "write_empty_chunks", "cache_metadata", "coordinates")


def _new_variable(name, var, zarr_format, user=None, codec=None):
    """A variable to create: (encoded Variable, its data, the kwargs of
    strata.to_zarr for it; None for strings, which zarr-python writes).

    `user` is what the caller's to_zarr(encoding=) gave for this variable:
    what a user names wins over what the variable's encoding kept from the
    store it was read from. Chunks: the user's, else the strata array's own
    (open_zarr(chunks=), .chunk(), a rechunk: never the stored ones a
    reader left in the encoding), else (data in memory) the encoding's, else
    strata's "auto". Codecs: the user's compressors/filters (translated to
    strata's codec syntax; ValueError for one strata cannot write), else
    `codec` (default blosc lz4); the stored ones are not reused."""
    user = user or {}
    var = _plain_variable(name, var, dict(var.encoding))
    stored = {k: var.encoding.pop(k) for k in _STORAGE_KEYS if k in var.encoding}
    if user.get("shards") is not None:
        raise NotImplementedError(f"to_zarr: variable {name!r}: encoding 'shards' is not "
                                  "supported (strata writes unsharded arrays here)")
    named_codec = _codec_of_encoding(name, user, zarr_format)
    if named_codec is not None:
        codec = named_codec
    enc = _encode(var, name, zarr_format)
    data = _encoded_data(enc)
    if _is_strings(data):
        return enc, data, None
    if user.get("chunks") is not None:
        chunks = _chunks_arg(name, user["chunks"], data.shape)
    elif isinstance(data, Array):
        chunks = None   # the array's own
    elif stored.get("chunks") is not None:
        chunks = _chunks_arg(name, stored["chunks"], data.shape)
    else:
        chunks = "auto"
    if isinstance(data, np.ndarray):
        data = strata.asarray(np.asarray(data, order="C"), chunks=chunks)
    elif chunks is not None and tuple(chunks) != data.chunksize:
        data = data.rechunk(tuple(chunks))
    attrs = dict(enc.attrs)
    fill = attrs.pop("_FillValue", None)
    dims = [str(d) for d in enc.dims]
    if zarr_format == 2:
        attrs = _json_attrs(attrs)
        attrs["_ARRAY_DIMENSIONS"] = dims
        fill_arg = _fill_arg(fill)
    else:
        # As xarray's zarr backend writes v3: the CF _FillValue an attribute
        # (FillValueCoder's encoding), the array's own fill value the
        # encoding's fill_value, NaN for floats, else 0.
        from xarray.backends.zarr import FillValueCoder
        if fill is not None:
            attrs["_FillValue"] = FillValueCoder.encode(fill, np.dtype(data.dtype))
        attrs = _json_attrs(attrs)
        own = user.get("fill_value", stored.get("fill_value"))
        if own is None:
            own = np.nan if np.dtype(data.dtype).kind in "fc" else 0
        fill_arg = _fill_arg(own)
    return enc, data, dict(zarr_format=zarr_format, attrs=attrs, fill_value=fill_arg,
                           dimension_names=dims if zarr_format == 3 else None, codec=codec)


def _chunks_arg(name, chunks, shape):
    """Chunks from an encoding (a tuple of ints, or a dict of dimension
    sizes xarray accepts too) as a tuple for strata."""
    if isinstance(chunks, int):
        chunks = (chunks,) * len(shape)
    chunks = tuple(chunks)
    if len(chunks) != len(shape) or not all(isinstance(c, (int, np.integer)) and
                                            (c > 0 or c == -1) for c in chunks):
        raise ValueError(f"to_zarr: variable {name!r}: encoding chunks {chunks!r} must be "
                         f"{len(shape)} positive ints (-1 for a whole axis)")
    return tuple(n if c == -1 else int(c) for c, n in zip(chunks, shape))


_BLOSC_SHUFFLE = {0: "none", 1: "byte", 2: "bit", -1: "auto", "noshuffle": "none",
                  "shuffle": "byte", "bitshuffle": "bit"}


def _codec_config(codec):
    """(name, configuration) of a numcodecs codec, a zarr-python 3 codec or
    their JSON (numcodecs' {"id": ...}, v3's {"name": ..., "configuration":
    ...})."""
    if hasattr(codec, "get_config") and not hasattr(codec, "to_dict"):
        codec = codec.get_config()
    elif hasattr(codec, "to_dict"):
        codec = codec.to_dict()
    if not isinstance(codec, dict):
        raise TypeError(type(codec).__name__)
    if "id" in codec:
        config = {k: v for k, v in codec.items() if k != "id"}
        return str(codec["id"]), config
    return str(codec.get("name")), dict(codec.get("configuration") or {})


def _strata_codec(codec):
    """One codec in strata's codec syntax, or None (a no-op: v3's bytes
    serializer), or ValueError naming what strata does not write."""
    name, cfg = _codec_config(codec)
    name = name[len("numcodecs."):] if name.startswith("numcodecs.") else name

    def opts(pairs):
        text = ",".join(f"{k}={v}" for k, v in pairs if v is not None)
        return f"{name}:{text}" if text else name
    if name == "blosc":
        shuffle = cfg.get("shuffle")
        shuffle = _BLOSC_SHUFFLE.get(shuffle.value if hasattr(shuffle, "value") else shuffle)
        cname = cfg.get("cname")
        cname = cname.value if hasattr(cname, "value") else cname
        return opts([("cname", cname), ("clevel", cfg.get("clevel")), ("shuffle", shuffle),
                     ("blocksize", cfg.get("blocksize"))])
    if name == "zstd":
        checksum = cfg.get("checksum")
        return opts([("level", cfg.get("level")),
                     ("checksum", None if checksum is None else str(bool(checksum)).lower())])
    if name in ("zlib", "gzip", "bz2"):
        return opts([("level", cfg.get("level"))])
    if name == "lz4":
        return opts([("acceleration", cfg.get("acceleration"))])
    if name in ("crc32", "adler32"):
        return opts([("location", cfg.get("location"))])
    if name in ("crc32c", "fletcher32"):
        return name
    if name == "shuffle":
        return opts([("elementsize", cfg.get("elementsize"))])
    if name == "bytes" and cfg.get("endian", "little") == "little":
        return None
    raise ValueError(f"codec {name!r} ({cfg}) is not one strata writes (blosc, zstd, zlib, "
                     "gzip, lz4, bz2, crc32, crc32c, adler32, fletcher32, shuffle)")


def _codec_of_encoding(name, user, zarr_format):
    """The codec (strata's syntax) the user's encoding names for a variable
    (filters, then compressor(s); "none" for no compressor), or None when it
    names none."""
    keys = [k for k in ("compressor", "compressors", "filters", "serializer", "codecs")
            if k in user]
    if not keys:
        return None
    if "compressor" in user and "compressors" in user:
        raise ValueError(f"to_zarr: variable {name!r}: encoding has both 'compressor' and "
                         "'compressors'; give one")
    if "codecs" in user:
        raise ValueError(f"to_zarr: variable {name!r}: encoding 'codecs' is not an encoding "
                         "xarray takes; give 'compressors' (and 'filters')")

    def listed(value):
        if value is None:
            return []
        return list(value) if isinstance(value, (list, tuple)) else [value]
    parts = []
    try:
        for c in listed(user.get("filters")) + listed(user.get("serializer")) + \
                listed(user.get("compressor")) + listed(user.get("compressors")):
            one = _strata_codec(c)
            if one is not None:
                parts.append(one)
    except (ValueError, TypeError) as e:
        raise ValueError(f"to_zarr: variable {name!r}: encoding {keys}: {e}") from None
    return "+".join(parts) if parts else "none"


def _with_user_encoding(ds, encoding):
    """The dataset's variables (coordinates named as xarray's encoder names
    them) with the user's CF encoding merged in (its storage keys are
    _new_variable's `user`), and the group's attributes."""
    variables, group_attrs = xr.conventions.encode_dataset_coordinates(ds)
    out = {}
    for name, var in variables.items():
        var = var.variable if hasattr(var, "variable") else var
        user = {k: v for k, v in encoding.get(name, {}).items() if k not in _STORAGE_KEYS}
        out[name] = xr.Variable(var.dims, var._data, var.attrs, {**var.encoding, **user})
    return out, group_attrs


def _json_attrs(attrs):
    """Attributes as JSON values, as xarray's zarr backend writes them."""
    from xarray.backends.zarr import encode_zarr_attr_value
    return {str(k): encode_zarr_attr_value(v) for k, v in attrs.items()}


def _fill_arg(fill):
    if fill is None:
        return "null"
    v = np.asarray(fill).item()
    if isinstance(v, complex):
        raise NotImplementedError("to_zarr: complex fill values are not supported")
    return v


def _write_group(ds, new, encoding, zarr_format, codec):
    """One lazy to_zarr handle per numeric variable of a new group (`new`, a
    NewGroup), and one deferred write per string variable (zarr-python's,
    run after the compute); returns (handles, string writes, the group's
    attributes). Nothing is written here."""
    # Non-index coordinates are named in the variables' "coordinates"
    # attributes (or the group's), as xarray's encoder writes them.
    variables, group_attrs = _with_user_encoding(ds, encoding)
    node = new.node
    handles, strings = [], []
    for name, var in variables.items():
        enc, data, kwargs = _new_variable(name, var, zarr_format, encoding.get(name), codec)
        if kwargs is None:
            data = _string_data(name, data, zarr_format)
            strings.append(lambda name=name, data=data, enc=enc:
                           _write_strings(node, name, data, enc, zarr_format))
            continue
        handles.append(strata.to_zarr(data, node.array_url(name), compute=False,
                                      overwrite=new.overwrite, **kwargs))
    return handles, strings, group_attrs


def _stored_encoding(a):
    """The CF encoding of stored array `a` as xarray's reader finds it
    (dtype, _FillValue, scale_factor/add_offset, units/calendar of times):
    xarray's decoder run on the array's attributes over a one-element
    stand-in for its data (nothing is read)."""
    attrs = a.cf_attrs()
    attrs.pop("coordinates", None)
    dummy = xr.Variable(a.dims, np.zeros((1,) * len(a.shape), dtype=a.dtype), attrs)
    decoded = xr.conventions.decode_cf_variable(a.name, dummy, concat_characters=False)
    encoding = dict(decoded.encoding)
    if a.dtype.kind in "US":
        # numpy would cut longer strings to the stored length: _strings_for
        # refuses them instead.
        encoding.pop("dtype", None)
    return encoding


def _check_existing_dims(name, new, a, region, append_dim):
    """xarray's check (and messages) that an existing variable keeps its
    dimensions and, but along append_dim, its sizes (the region's sizes in
    a region write)."""
    if tuple(new.dims) != a.dims:
        if set(new.dims) == set(a.dims):
            new = new.transpose(*a.dims)
        else:
            raise ValueError(f"variable {name!r} already exists with different dimension "
                             f"names {a.dims} != {tuple(new.dims)}, but changing variable "
                             "dimensions is not supported by to_zarr().")
    existing_sizes = {}
    for d, n in zip(a.dims, a.shape):
        if region is not None and d in region:
            start, stop, _ = region[d].indices(n)
            n = stop - start
        if d != append_dim:
            existing_sizes[d] = n
    new_sizes = {d: n for d, n in zip(new.dims, new.shape) if d != append_dim}
    if existing_sizes != new_sizes:
        raise ValueError(f"variable {name!r} already exists with different dimension sizes: "
                         f"{existing_sizes} != {new_sizes}. to_zarr() only supports changing "
                         f"dimension sizes when explicitly appending, but "
                         f"append_dim={append_dim!r}. If you are attempting to write to a "
                         "subset of the existing store without changing dimension sizes, "
                         "consider using the region argument in to_zarr().")
    return new


def _write_into_group(ds, group, mode, region, append_dim, encoding, zarr_format, codec,
                      consolidated, compute_kwargs):
    """mode "a" or "r+" into the existing `group` (a Group; see
    Dataset.strata.to_zarr): every check first, then one compute, then the
    strings, the group's attributes and its consolidated metadata; on
    failure the old metadata of appended arrays comes back and created
    arrays go."""
    target = group.url
    if not group.is_zarr_group():
        if group.exists():
            raise ValueError(f"to_zarr: {target!r} exists and is not a Zarr group")
        if append_dim is not None:
            raise ValueError(f"append_dim={append_dim!r} does not match any existing dataset "
                             "dimensions {}")
        raise FileNotFoundError(f"to_zarr(mode={mode!r}): no Zarr group at {target!r} to "
                                "write into")
    fmt, _, arrays = _group_metadata(group, consolidated=False)
    if zarr_format is not None and zarr_format != fmt:
        raise ValueError(f"to_zarr: {target!r} is a Zarr v{fmt} group; zarr_format="
                         f"{zarr_format} cannot change it in mode={mode!r}")
    stored = {a.name: a for a in arrays}
    # xarray's checks for modes "a" and "r+", in its order and words.
    for name, v in ds.variables.items():
        a = stored.get(name)
        if a is not None and v.dtype.kind not in "iufcMmb" and v.dtype != object and \
                not (v.dtype.kind in "SU" and a.dtype == object) and v.dtype != a.dtype:
            raise ValueError(f"Mismatched dtypes for variable {name} between Zarr store on disk "
                             f"and dataset to append. Store has dtype {a.dtype} but dataset to "
                             f"append has dtype {v.dtype}.")
    if append_dim is not None:
        sizes = {}
        for a in arrays:
            for d, n in zip(a.dims, a.shape):
                if d in sizes and sizes[d] != n:
                    raise ValueError(f"found conflicting lengths for dimension {d} "
                                     f"({n} != {sizes[d]})")
                sizes[d] = n
        if append_dim not in sizes:
            raise ValueError(f"append_dim={append_dim!r} does not match any existing dataset "
                             f"dimensions {sizes}")
    for name in stored:
        if name in encoding:
            raise ValueError(f"variable {name!r} already exists, but encoding was provided")
    if mode == "r+":
        new_names = [k for k in ds.variables if k not in stored]
        if new_names:
            raise ValueError(f"dataset contains non-pre-existing variables {new_names!r}, "
                             "which is not allowed in ``xarray.Dataset.to_zarr()`` with "
                             "``mode='r+'``. To allow writing new variables, set ``mode='a'``.")
    variables, group_attrs = _with_user_encoding(ds, encoding)
    handles, created, strings, grown = [], [], [], []
    for name, var in variables.items():
        path = group.array_url(name)
        a = stored.get(name)
        if a is None:
            if region is not None:
                raise ValueError(f"to_zarr: variable {name!r} is not in {target!r}; region= "
                                 "writes into existing variables only")
            if group.holds(name):
                raise ValueError(f"to_zarr: {path!r} exists and is not a Zarr array of the "
                                 f"group; refusing to write variable {name!r} over it")
            enc, data, kwargs = _new_variable(name, var, fmt, encoding.get(name), codec)
            if kwargs is None:
                data = _string_data(name, data, fmt)
                strings.append(lambda name=name, data=data, enc=enc:
                               _write_strings(group, name, data, enc, fmt))
            else:
                handles.append(strata.to_zarr(data, path, compute=False, **kwargs))
            created.append(name)
            continue
        # An existing variable: encoded as stored (xarray's rule), then
        # appended or written into its box; "a-" appends but rewrites none.
        if mode == "a-" and append_dim is not None and append_dim not in a.dims:
            continue
        var = _plain_variable(name, var, _stored_encoding(a))
        enc = _encode(var, name, fmt)
        enc = _check_existing_dims(name, enc, a, region, append_dim)
        data = _encoded_data(enc)
        if append_dim is not None and append_dim in a.dims:
            where = dict(append_dim=a.dims.index(append_dim))
            grown.append(a)
        else:
            where = dict(region=tuple(region[d].indices(n)[0] if region and d in region else 0
                                      for d, n in zip(a.dims, a.shape)))
        if _is_strings(data):
            data = _strings_for(a, _string_data(name, data, fmt))
            strings.append(lambda name=name, data=data, where=where:
                           _write_existing_strings(group, name, data, where))
            continue
        if isinstance(data, np.ndarray):
            data = strata.asarray(np.asarray(data, order="C"))
        handles.append(strata.to_zarr(data, path, compute=False, **where))
    # Every check passed and nothing is written yet.
    kept = _snapshot(group, fmt, grown)
    try:
        if handles:
            strata.compute(*handles, **compute_kwargs)
        for write in strings:
            write()
        if mode != "r+":
            _write_group_attrs(group, fmt, _json_attrs(group_attrs))
            if consolidated or _has_consolidated(group, fmt):
                _consolidate(group, fmt, _array_names(group, fmt))
    except BaseException:
        for key, content in kept.items():
            if content is None:
                group.erase(key)
            else:
                group.put(key, content)
        for name in created:
            group.erase_member(name)
        raise


def _strings_for(a, data):
    """Strings to write into the stored string array `a`, as its dtype
    holds them; ValueError (before anything is written) for strings longer
    than a fixed-length dtype holds, which zarr-python would truncate."""
    if a.dtype.kind == "O":
        return data.astype(object)
    if a.dtype.kind not in "US":
        raise TypeError(f"to_zarr: variable {a.name!r} holds strings; the stored array has "
                        f"dtype {a.dtype}")
    if a.dtype.kind == "S" and data.dtype.kind == "U":
        data = np.char.encode(data, "utf-8")
    elif a.dtype.kind == "U" and data.dtype.kind == "S":
        data = np.char.decode(data, "utf-8")
    if data.dtype.itemsize > a.dtype.itemsize:
        raise ValueError(f"to_zarr: variable {a.name!r} is stored with dtype {a.dtype}, which "
                         f"would truncate these strings of dtype {data.dtype}")
    return data


def _write_existing_strings(group, name, data, where):
    """Strings (which strata has no dtype for) into an existing array, by
    zarr-python: appended along an axis or written into a box."""
    import zarr
    z = zarr.open_array(group.zarr_store(name), mode="r+")
    if "append_dim" in where:
        z.append(data, axis=where["append_dim"])
    else:
        z[tuple(slice(o, o + n) for o, n in zip(where["region"], data.shape))] = data


def _snapshot(group, fmt, grown):
    """The metadata documents a failed write must put back: the group's,
    and those of the arrays an append grows (None: the key did not exist)."""
    keys = [".zgroup", ".zattrs", ".zmetadata"] if fmt == 2 else ["zarr.json"]
    for a in grown:
        keys.append(f"{a.name}/.zarray" if fmt == 2 else f"{a.name}/zarr.json")
    return {k: group.get(k) for k in keys}


def _array_names(group, fmt):
    """The arrays directly in `group`."""
    if fmt == 2:
        return group.members(".zarray")
    return [n for n in group.members("zarr.json")
            if (group.get_json(f"{n}/zarr.json") or {}).get("node_type") == "array"]


def _has_consolidated(group, fmt):
    if fmt == 2:
        return group.has(".zmetadata")
    return "consolidated_metadata" in (group.get_json("zarr.json") or {})


def _write_group_attrs(group, fmt, attrs):
    """The group's own metadata with attributes `attrs` (JSON values); a v3
    group keeps its consolidated metadata until _consolidate."""
    if fmt == 2:
        group.put(".zgroup", {"zarr_format": 2})
        group.put(".zattrs", attrs)
    else:
        doc = group.get_json("zarr.json") or {}
        doc.update({"zarr_format": 3, "node_type": "group", "attributes": attrs})
        group.put("zarr.json", doc)


def _consolidate(group, fmt, names):
    """The group's consolidated metadata, from its own and its arrays'
    (`names`) metadata as they are now; entries for other nodes already in
    it (nested groups) are kept."""
    if fmt == 2:
        meta = dict((group.get_json(".zmetadata") or {}).get("metadata", {}))
        keys = [".zgroup", ".zattrs"] + [f"{n}/{f}" for n in names for f in (".zarray", ".zattrs")]
        for key in keys:
            doc = group.get_json(key)
            if doc is not None:
                meta[key] = doc
        group.put(".zmetadata", {"metadata": meta, "zarr_consolidated_format": 1})
    else:
        doc = group.get_json("zarr.json")
        meta = dict((doc.get("consolidated_metadata") or {}).get("metadata") or {})
        for name in names:
            meta[name] = group.get_json(f"{name}/zarr.json")
        doc["consolidated_metadata"] = {"kind": "inline", "must_understand": False,
                                        "metadata": meta}
        group.put("zarr.json", doc)


def _string_data(name, data, zarr_format):
    """A variable's strings as a numpy string array, or TypeError for what
    zarr-python cannot write for strata (objects that are not strings,
    strings in Zarr v3)."""
    if data.dtype.kind == "O":
        if not all(isinstance(v, str) for v in data.ravel()):
            raise TypeError(f"to_zarr: variable {name!r} holds Python objects that are not "
                            "strings, which strata cannot write")
        data = data.astype(str)
    if data.dtype.kind not in "US":
        raise TypeError(f"to_zarr: variable {name!r} has dtype {data.dtype}, which strata "
                        "cannot write")
    return data


def _write_strings(group, name, data, var, zarr_format):
    """A variable of strings (labels such as country names: in memory,
    strata has no string dtype) written by zarr-python, as xarray writes it
    (one chunk; _ARRAY_DIMENSIONS in v2, dimension_names in v3)."""
    import zarr
    dims = [str(d) for d in var.dims]
    z = zarr.create_array(group.zarr_store(name), shape=data.shape, dtype=data.dtype,
                          chunks=data.shape, fill_value=None, zarr_format=zarr_format,
                          dimension_names=dims if zarr_format == 3 else None,
                          overwrite=True)
    z[...] = data
    attrs = dict(var.attrs)
    attrs.pop("_FillValue", None)
    attrs = _json_attrs(attrs)
    if zarr_format == 2:
        attrs["_ARRAY_DIMENSIONS"] = dims
    z.attrs.put(attrs)


# ============================================================== groupby

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
    reduction. With strata's NaN-aware groupby_reduce (issue 16) it is that
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
