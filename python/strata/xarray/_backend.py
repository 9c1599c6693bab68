"""The Zarr side of strata.xarray: open_zarr (a Zarr group as a Dataset of
lazy strata arrays, CF-decoded) and the pieces `.strata.to_zarr` writes a
group with (modes, regions, appends, encodings, consolidated metadata).

What open_zarr decodes (CF, as xarray's decode_cf does): on coordinates,
everything xarray decodes (they are read eagerly and decoded by xarray
itself: times, masks, scale/offset, bools); on data variables (lazy),
`_FillValue`/`missing_value` to NaN, `scale_factor`/`add_offset`, and
`dtype: bool`. Not decoded on data variables: CF time units (strata has no
datetime dtype: they stay numbers with their `units` attribute), `_Unsigned`
(NotImplementedError) and string/object dtypes (strata has none).
"""
import json

import numpy as np
import pandas as pd
import xarray as xr

import strata
from .._core import _strata
from .._group import group_at
from ..array_api.array_object import Array


# ============================================================== reading

class _ArrayMeta:
    """One array of a group as the C++ reader gives it (_strata.read_hierarchy,
    storage/zarr/hierarchy.h): its name, dims, dtype, chunks, fill value,
    attributes and metadata document (for zarr-python's codecs)."""

    def __init__(self, node):
        self.name = node["path"]
        self.zarr_format = node["zarr_format"]
        self.attrs = json.loads(node["attributes"])
        self.meta = json.loads(node["document"])
        self.shape = tuple(node["shape"])
        if node["variable_length"]:
            # Strings Strata does not hold: zarr-python reads them.
            self.dtype = np.dtype(object)
            self.chunks = None
            self.fill_value = self.meta.get("fill_value")
        else:
            self.dtype = np.dtype(node["dtype"])
            self.chunks = tuple(node["chunks"])
            raw = node["fill_value"]
            self.fill_value = None if raw is None else np.frombuffer(raw, self.dtype)[0]
        dims = node["dimensions"]
        named = self.attrs.pop("_ARRAY_DIMENSIONS", None)
        if dims is None and self.shape == ():
            dims = ()
        if dims is None and named is not None and len(named) != len(self.shape):
            raise ValueError(f"open_zarr: array {self.name!r} has {len(named)} dimension names "
                             f"for {len(self.shape)} dimensions")
        if dims is None or any(d is None for d in dims):
            raise ValueError(
                f"open_zarr: array {self.name!r} has no dimension names (neither the "
                "_ARRAY_DIMENSIONS attribute of Zarr v2 nor dimension_names of Zarr v3); "
                "xarray needs them")
        self.dims = tuple(dims)

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
    """(zarr_format, group attributes, [_ArrayMeta]) of `group` (a Group), as
    the CLI reads it (_strata.read_hierarchy): from consolidated metadata
    when present (or required), else from each member's own metadata."""
    what = "open_zarr"
    try:
        nodes, _ = _strata.read_hierarchy(group.url, consolidated)
    except FileNotFoundError:
        if group.exists():
            raise ValueError(f"{what}: {group.url!r} is not a Zarr group (no .zgroup, "
                             ".zmetadata or zarr.json)") from None
        raise FileNotFoundError(f"{what}: no Zarr group at {group.url!r}") from None
    except ValueError as e:
        if consolidated is True and "has no consolidated metadata" in str(e):
            raise ValueError(f"{what}: {e}; pass consolidated=None or False") from None
        raise ValueError(f"{what}: {e}") from None
    except OSError as e:  # an unreachable or refusing server, named by the store
        raise type(e)(f"{what}: {e}") from None
    root = nodes[0]
    if root["is_array"]:
        raise ValueError(f"{what}: {group.url!r} is a Zarr 'array', not a group (use "
                         "strata.from_zarr for one array)")
    arrays = [_ArrayMeta(n) for n in nodes[1:] if n["is_array"] and "/" not in n["path"]]
    return root["zarr_format"], json.loads(root["attributes"]), arrays


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


# ============================================================== writing

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
