"""Dataframes and Parquet from xarray objects on Strata: what xarray
hard-wires to Dask (`to_dask_dataframe`), for Strata users
(`ds.strata.to_dataframe()`, `ds.strata.to_parquet(...)`; docs/dataframes.md).

to_dataframe computes the object (one strata compute) and hands it to
xarray's own to_dataframe: the same index, columns and dtypes as
`ds.compute().to_dataframe()`. It refuses, before computing, a frame that
cannot fit in the spec's total_system_mem.

to_parquet writes a Parquet dataset, one file per block of the dataset,
without ever holding more than a block's rows:
- the columns are xarray's (every non-index variable, broadcast to the
  dimensions in dim_order) and the index is xarray's (one column per
  dimension: its index coordinate, or the position along it), stored with
  pandas' metadata so that pandas reads the MultiIndex back;
- the blocks are boxes of the variables' strata chunks (_block_chunks):
  unified, split along the leading dimensions where one chunk's rows would
  not fit in allowed_mem, and grouped (trailing dimensions first) up to
  rows_per_file rows, so that small chunks do not make tiny files; one
  strata map_blocks op writes each block's rows as
  `part-<flat block index>.parquet` (one row group unless row_group_size
  says less) as the block finishes. The rows a block holds while it is
  converted and encoded are declared as the op's extra memory
  (`_row_bytes`), so every task's projection counts them and a plan whose
  task cannot fit is refused before anything runs;
- publishing: `_SUCCESS` (a JSON document: rows, files) is written last.
  On a path, the dataset is assembled in a hidden directory beside the
  target and renamed into place, so a reader never sees part of it; on S3
  (which cannot rename) each part appears whole when its PUT ends and the
  dataset is complete when `_SUCCESS` exists. A failed write removes
  everything it wrote (the staging directory; on S3 every key under the
  prefix).
S3 URLs go through the engine's own Store (`_strata.open_store`): the same
endpoint (`?endpoint=`, AWS_ENDPOINT_URL*), region and credential chain
(src/strata/storage/s3_credentials.h) as every other strata read and write.

pyarrow is optional (`pip install 'strata[parquet]'`); to_parquet raises an
ImportError naming the extra when it is missing.

Thread-safety: the block writer runs on the engine's worker threads (each
block writes its own file); the functions here are called from one thread.
"""
import json
import math
import os
import shutil
import uuid

import numpy as np
import pandas as pd
import xarray as xr

from .. import _block_functions
from ..array_api.array_object import Array
from .._compute import compute
from .._core import _strata
from ..array_api.creation_functions import zeros
from .._spec import Spec

__all__ = ["to_dataframe", "to_parquet"]

SUCCESS = "_SUCCESS"
# Names a Parquet dataset directory may hold (strata's, Dask's and Spark's
# writers): what mode="w" agrees to replace.
_DATASET_FILES = (SUCCESS, "_metadata", "_common_metadata")
# Bytes per row of a string or object column: a Python str (pandas' object
# columns) is about 50 bytes before its characters.
_MIN_STRING_ROW_BYTES = 64
# Copies of a block's rows alive at once while it is written: xarray's
# flattened columns, the DataFrame, the Arrow table and the encoded pages
# (plus the bytes object sent to S3).
_ROW_COPIES_LOCAL = 4
_ROW_COPIES_S3 = 5
# Rows per file unless rows_per_file or allowed_mem says less (pyarrow's
# default row group size).
DEFAULT_ROWS_PER_FILE = 1 << 20
# Parquet's footer, page headers and pyarrow's writer buffers, per block.
_WRITER_FIXED_BYTES = 4 << 20


def _require_pyarrow(what):
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError(f"{what} needs pyarrow, which is not installed: "
                          "pip install 'strata[parquet]'") from None
    return pyarrow, pyarrow.parquet


# ================================================================ the table

def _as_dataset(obj, name, what):
    """A Dataset of obj: a DataArray becomes its one variable, named as
    xarray's DataArray.to_dataframe names it."""
    if isinstance(obj, xr.Dataset):
        if name is not None:
            raise TypeError(f"{what}: name= is for a DataArray; a Dataset's columns are its "
                            "variables")
        return obj
    if not isinstance(obj, xr.DataArray):
        raise TypeError(f"{what}: expected an xarray Dataset or DataArray, got "
                        f"{type(obj).__name__}")
    name = name if name is not None else obj.name
    if name is None:
        raise ValueError(f"{what}: cannot convert an unnamed DataArray to a DataFrame: use the "
                         "name parameter")
    return obj.to_dataset(name=name)


def _ordered_dims(ds, dim_order, what):
    """{dim: size} in dim_order (default: the dataset's own order), as
    xarray's Dataset.to_dataframe orders them."""
    if dim_order is None:
        return dict(ds.sizes)
    if isinstance(dim_order, str) or not hasattr(dim_order, "__iter__"):
        raise TypeError(f"{what}: dim_order must be a sequence of dimension names, got "
                        f"{dim_order!r}")
    dim_order = list(dim_order)
    if set(dim_order) != set(ds.dims) or len(dim_order) != len(ds.dims):
        raise ValueError(f"{what}: dim_order {dim_order} does not match the set of dimensions "
                         f"of this Dataset: {list(ds.dims)}")
    return {d: ds.sizes[d] for d in dim_order}


def _columns(ds):
    """xarray's columns: every variable that is not an index, in order."""
    return [k for k in ds.variables if k not in ds.xindexes]


def _row_bytes(ds, dims, columns):
    """Bytes of one row of the frame: every column and index level (string
    columns at least _MIN_STRING_ROW_BYTES), plus the MultiIndex codes."""
    def itemsize(dtype):
        if dtype.kind in "OUS":
            return max(dtype.itemsize, _MIN_STRING_ROW_BYTES)
        return dtype.itemsize
    total = sum(itemsize(ds.variables[k].dtype) for k in columns)
    for d in dims:
        total += (itemsize(ds.variables[d].dtype) if d in ds.variables else 8) + 8
    return total


def _check_indexes(ds, dims, what):
    for d in dims:
        index = ds.indexes.get(d)
        if isinstance(index, pd.MultiIndex):
            raise NotImplementedError(f"{what}: dimension {d!r} has a MultiIndex; "
                                      "reset_index() it first")


def _block_frame(ds, dims, columns, where, values):
    """The DataFrame of one block: `where` is {dim: slice}, `values` the
    block's data of every column ({name: ndarray over dims}). Built by
    xarray's own to_dataframe, so that its index, columns and dtypes are
    xarray's."""
    coords = {}
    for d in dims:
        if d in ds.indexes:
            coords[d] = (d, ds.indexes[d][where[d]])
        else:
            coords[d] = (d, np.arange(where[d].start, where[d].stop, dtype=np.int64))
    sub = xr.Dataset({k: (tuple(dims), values[k]) for k in columns}, coords=coords)
    return sub.to_dataframe(dim_order=list(dims))[columns]


def _schema(pa, ds, dims, columns):
    """The Arrow schema every part is written with (one row of the right
    dtypes: strings typed as strings, not as Arrow's null of an empty
    column)."""
    one = {d: slice(0, 1) for d in dims}
    values = {}
    for k in columns:
        dtype = ds.variables[k].dtype
        v = np.zeros((1,) * len(dims), dtype=dtype) if dtype.kind != "O" else \
            np.full((1,) * len(dims), "", dtype=object)
        values[k] = v
    return pa.Schema.from_pandas(_block_frame(ds, dims, columns, one, values),
                                 preserve_index=True)


# ============================================================ to_dataframe

def _spec_of(ds):
    for v in ds.variables.values():
        if isinstance(v._data, Array):
            return v._data.spec
    return None


def to_dataframe(obj, *args, **kwargs):
    """obj (a Dataset or DataArray) as a pandas DataFrame equal to xarray's
    `obj.compute().to_dataframe(...)`, with xarray's arguments (a Dataset's
    dim_order; a DataArray's name, dim_order), after one strata compute of
    every lazy variable (compute_kwargs: callbacks=, optimize_graph=).
    MemoryError (before computing) when the frame would not fit in the
    spec's total_system_mem: write it with to_parquet instead."""
    params = ("name", "dim_order") if isinstance(obj, xr.DataArray) else ("dim_order",)
    if len(args) > len(params):
        raise TypeError(f"to_dataframe: takes at most {len(params)} positional arguments "
                        f"({', '.join(params)}), got {len(args)}")
    for p, a in zip(params, args):
        if p in kwargs:
            raise TypeError(f"to_dataframe: got multiple values for {p}")
        kwargs[p] = a
    return _to_dataframe(obj, **kwargs)


def _to_dataframe(obj, dim_order=None, name=None, **compute_kwargs):
    what = "to_dataframe"
    ds = _as_dataset(obj, name, what)
    dims = _ordered_dims(ds, dim_order, what)
    spec = _spec_of(ds)
    if spec is not None:
        rows = math.prod(dims.values())
        need = rows * _row_bytes(ds, dims, _columns(ds))
        if need > spec.total_system_mem:
            raise MemoryError(f"{what}: the frame of {rows} rows needs about {need} bytes, "
                              f"more than total_system_mem ({spec.total_system_mem}); write "
                              "it with .strata.to_parquet() instead")
    computed = ds.strata.compute(**compute_kwargs)
    return computed.to_dataframe(dim_order=list(dims))


# =============================================================== to_parquet

def _destination(path, what):
    """("local", absolute path) or ("s3", URL without a trailing '/')."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"{what}: expected a directory path or an s3:// URL, got "
                        f"{type(path).__name__}")
    if path.startswith("s3://"):
        base, sep, query = path.partition("?")
        base = base.rstrip("/")
        if "/" not in base[len("s3://"):]:
            raise ValueError(f"{what}: {path!r}: name a prefix under the bucket "
                             "(s3://bucket/prefix), not the bucket itself")
        return "s3", base + sep + query
    if path.startswith("file://"):
        path = path[len("file://"):]
    if "://" in path:
        raise ValueError(f"{what}: {path!r}: unsupported URL scheme (expected a local path, "
                         "file:// or s3://)")
    if not path:
        raise ValueError(f"{what}: the path is empty")
    return "local", os.path.abspath(path)


def _is_dataset_file(name):
    return name.endswith(".parquet") or name in _DATASET_FILES


def _part_name(index, numblocks):
    flat = 0
    for i, n in zip(index, numblocks):
        flat = flat * n + i
    width = max(5, len(str(math.prod(numblocks) - 1)))
    return f"part-{flat:0{width}d}.parquet"


class _LocalTarget:
    """A dataset directory assembled in a hidden staging directory beside
    the target and renamed into place when complete."""

    def __init__(self, path, mode, what):
        self.path = path
        self._what = what
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{what}: {parent!r} is not a directory (the parent of "
                                    f"{path!r})")
        if os.path.lexists(path):
            if mode == "w-":
                raise FileExistsError(f"{what}: {path!r} exists (mode='w' replaces a Parquet "
                                      "dataset)")
            if not os.path.isdir(path) or not all(_is_dataset_file(n)
                                                  for n in os.listdir(path)):
                raise ValueError(f"{what}: {path!r} exists and is not a Parquet dataset "
                                 "directory; mode='w' replaces only those")
        tag = uuid.uuid4().hex[:12]
        self.staging = os.path.join(parent, f".{os.path.basename(path)}.strata-staging-{tag}")
        self._old = os.path.join(parent, f".{os.path.basename(path)}.strata-old-{tag}")

    def begin(self):
        os.mkdir(self.staging)

    def writer(self):
        return _LocalParts(self.staging)

    def commit(self, success):
        with open(os.path.join(self.staging, SUCCESS), "w") as f:
            f.write(success)
        replaced = os.path.lexists(self.path)
        if replaced:
            os.rename(self.path, self._old)
        os.rename(self.staging, self.path)
        if replaced:
            shutil.rmtree(self._old)

    def abort(self):
        shutil.rmtree(self.staging, ignore_errors=True)


class _LocalParts:
    """Writes a part file into the staging directory (picklable: the dask
    and ray executors run it on their workers)."""

    def __init__(self, directory):
        self._directory = directory

    def write(self, pa, pq, table, name, **options):
        pq.write_table(table, os.path.join(self._directory, name), **options)


class _S3Target:
    """A dataset under an S3 prefix: parts written in place, `_SUCCESS`
    last; with mode="w" the old `_SUCCESS` goes first, then the old parts."""

    def __init__(self, url, mode, what):
        self.path = url
        self._what = what
        try:
            self._store = _strata.open_store(url, True)
            keys = self._store.list("")
        except (OSError, ValueError) as e:
            raise type(e)(f"{what}: {e}") from None
        if keys:
            if mode == "w-":
                raise FileExistsError(f"{what}: {url} holds objects (mode='w' replaces a "
                                      "Parquet dataset)")
            if not all(_is_dataset_file(k.rsplit("/", 1)[-1]) for k in keys):
                raise ValueError(f"{what}: {url} holds objects that are not a Parquet "
                                 "dataset's; mode='w' replaces only those")
        self.staging = None
        self._replace = bool(keys)

    def begin(self):
        if self._replace:
            self._store.erase(SUCCESS)
            self._store.erase_prefix("")

    def writer(self):
        return _S3Parts(self.path)

    def commit(self, success):
        self._store.set(SUCCESS, success.encode())

    def abort(self):
        self._store.erase_prefix("")


class _S3Parts:
    """Writes a part through the engine's Store of the URL, opened once per
    process that writes (not pickled: each dask or ray worker opens its own)."""

    def __init__(self, url):
        self._url = url
        self._store = None

    def __getstate__(self):
        return {"_url": self._url, "_store": None}

    def write(self, pa, pq, table, name, **options):
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, **options)
        if self._store is None:
            self._store = _strata.open_store(self._url, True)
        self._store.set(name, sink.getvalue().to_pybytes())


def _check_options(pa, compression, row_group_size, what):
    if compression is not None:
        if not isinstance(compression, str):
            raise TypeError(f"{what}: compression must be a codec name such as 'zstd', got "
                            f"{type(compression).__name__}")
        try:
            known = compression.lower() == "none" or pa.Codec.is_available(compression)
        except ValueError:   # a name pyarrow does not know
            known = False
        if not known:
            raise ValueError(f"{what}: unknown or unavailable compression {compression!r}")
    _check_rows(row_group_size, "row_group_size", what)


def _check_rows(value, name, what):
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{what}: {name} must be an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{what}: {name} must be at least 1, got {value}")


def _block_chunks(ds, dims, lazy, most_rows):
    """The block shape: per dimension the smallest strata chunk of a variable
    that has it (the whole dimension when none has); halved along the
    leading dimensions while a block has more than most_rows rows; then
    grown, trailing dimensions first and in whole chunks, up to most_rows
    (a file per tiny chunk would make a dataset of tiny files)."""
    chunks = []
    for d, size in dims.items():
        sizes = [ds.variables[k]._data.chunksize[ds.variables[k].dims.index(d)]
                 for k in lazy if d in ds.variables[k].dims]
        chunks.append(max(1, min(sizes) if sizes else size))
    while math.prod(chunks) > most_rows:
        axis = next((i for i, c in enumerate(chunks) if c > 1), None)
        if axis is None:
            break
        chunks[axis] = (chunks[axis] + 1) // 2
    sizes = list(dims.values())
    for axis in reversed(range(len(chunks))):
        others = math.prod(chunks) // chunks[axis]
        fit = (most_rows // others) // chunks[axis] * chunks[axis]
        chunks[axis] = max(chunks[axis], min(sizes[axis], fit))
        if chunks[axis] < sizes[axis]:
            break
    return tuple(chunks)


def to_parquet(obj, path, *, mode="w-", name=None, dim_order=None, compression="snappy",
               row_group_size=None, rows_per_file=None, spec=None, **compute_kwargs):
    """Writes obj (a Dataset or DataArray) as a Parquet dataset at `path` (a
    directory or an s3://bucket/prefix URL): the rows of xarray's
    `obj.to_dataframe(dim_order)`, one file per block (module docstring).
    mode "w-" (default) refuses an existing target; "w" replaces a Parquet
    dataset (nothing else). compression: a Parquet codec name (pyarrow's,
    default snappy) or None; row_group_size: at most this many rows per row
    group (default: one row group per file). rows_per_file: at most this
    many rows per file (default: what fits in allowed_mem, up to
    DEFAULT_ROWS_PER_FILE). spec: the Spec for a dataset with no
    strata-backed variable (else theirs; default strata.Spec()).
    compute_kwargs go to strata.compute (callbacks=, optimize_graph=).
    Errors (before anything is written): TypeError/ValueError for bad
    arguments, FileExistsError for an existing target with mode "w-",
    FileNotFoundError/OSError for a missing parent, bucket or endpoint,
    ImportError without pyarrow; then whatever the compute raises."""
    what = "to_parquet"
    pa, pq = _require_pyarrow(what)
    if mode not in ("w", "w-"):
        raise ValueError(f"{what}: mode must be 'w-' or 'w', got {mode!r}")
    ds = _as_dataset(obj, name, what)
    dims = _ordered_dims(ds, dim_order, what)
    if not dims:
        raise ValueError(f"{what}: the dataset has no dimensions; write "
                         ".strata.to_dataframe().to_parquet() instead")
    _check_indexes(ds, dims, what)
    _check_options(pa, compression, row_group_size, what)
    _check_rows(rows_per_file, "rows_per_file", what)
    if spec is not None and not isinstance(spec, Spec):
        raise TypeError(f"{what}: spec must be a strata.Spec, got {type(spec).__name__}")
    kind, where = _destination(path, what)
    columns = _columns(ds)
    # Every column broadcast to the dimensions in order: strata arrays stay
    # lazy, others are numpy (read now, as xarray's to_dataframe reads them).
    variables = {k: ds.variables[k].set_dims(dims) for k in columns}
    lazy = [k for k in columns if isinstance(ds.variables[k]._data, Array)]
    eager = {k: np.asarray(variables[k].values) for k in columns if k not in lazy}
    spec = _spec_of(ds) or spec or Spec()

    copies = _ROW_COPIES_S3 if kind == "s3" else _ROW_COPIES_LOCAL
    row_bytes = _row_bytes(ds, dims, columns)
    inputs_per_row = sum(2 * ds.variables[k].dtype.itemsize for k in lazy)
    budget = spec.allowed_mem - spec.reserved_mem - _WRITER_FIXED_BYTES
    rows_fit = max(1, budget // (copies * row_bytes + inputs_per_row))
    chunks = _block_chunks(ds, dims, lazy, min(rows_fit, rows_per_file or DEFAULT_ROWS_PER_FILE))
    numblocks = tuple(math.ceil(n / c) for n, c in zip(dims.values(), chunks))
    extra_mem = copies * row_bytes * math.prod(chunks) + _WRITER_FIXED_BYTES
    arrays = []
    for k in lazy:
        a = variables[k].data
        if tuple(a.chunksize) != chunks:
            a = a.rechunk(chunks)
        arrays.append(a)
    if not arrays:
        arrays = [zeros(tuple(dims.values()), dtype=bool, chunks=chunks, spec=spec)]

    schema = _schema(pa, ds, dims, columns)
    order = list(dims) + columns
    target = (_S3Target if kind == "s3" else _LocalTarget)(where, mode, what)
    writer = target.writer()
    dim_names = tuple(dims)

    def write_block(*blocks, block_id=None):
        sel = {d: slice(i * c, min((i + 1) * c, n))
               for d, i, c, n in zip(dim_names, block_id, chunks, dims.values())}
        values = dict(zip(lazy, blocks))
        for k, v in eager.items():
            values[k] = v[tuple(sel[d] for d in dim_names)]
        frame = _block_frame(ds_index, dim_names, columns, sel, values)
        # The dimensions first, as a reader of the columns expects them.
        table = pa.Table.from_pandas(frame, schema=schema, preserve_index=True).select(order)
        writer.write(pa, pq, table, _part_name(block_id, numblocks),
                     compression=compression,
                     row_group_size=row_group_size or max(1, table.num_rows))
        return np.full((1,) * len(dim_names), table.num_rows, dtype=np.int64)

    # What the block writer needs of the dataset: its indexes and dtypes,
    # not its (lazy) data, which would travel with the function otherwise.
    ds_index = xr.Dataset(coords={d: ds.indexes[d] for d in dims if d in ds.indexes})
    rows = _block_functions.map_blocks(write_block, *arrays, dtype=np.int64,
                                       chunks=(1,) * len(dims), extra_mem=int(extra_mem),
                                       name=what)
    target.begin()
    try:
        counts, = compute(rows, **compute_kwargs)
        written = int(np.asarray(counts).sum())
        expected = math.prod(dims.values())
        if written != expected:
            raise RuntimeError(f"{what}: wrote {written} rows, expected {expected}")
        success = json.dumps({"rows": written,
                              "files": [_part_name(i, numblocks) for i in np.ndindex(*numblocks)]})
        target.commit(success)
    except BaseException:
        target.abort()
        raise
    return None
