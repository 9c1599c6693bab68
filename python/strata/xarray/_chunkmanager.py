"""Strata as xarray's chunk manager for strata arrays, so that

    xr.open_zarr("ifs.zarr", chunked_array_type="strata",
                 from_array_kwargs={"spec": strata.Spec(allowed_mem="2GB")})
    ds.chunk({"time": 24}, chunked_array_type="strata")
    ds.compute(); ds.persist(); ds.to_zarr("out.zarr")

run on Strata through xarray's own methods. xarray finds this class through
the `xarray.chunkmanagers` entry point `strata` (the package's
`strata-<version>.dist-info/entry_points.txt`, which the build writes beside
the package); without that metadata, pass the instance:
`chunked_array_type=strata.xarray.chunk_manager()`. `.chunk()` without
chunked_array_type uses xarray's default manager: make it strata with
`xr.set_options(chunk_manager="strata")` (xarray's own option).

Each hook's docstring names the xarray call that reaches it. Every hook
builds strata ops (nothing runs before compute / persist / store), and
every op's tasks are checked against the Spec's allowed_mem when the plan
is built. Functions of the user's (map_blocks, blockwise, apply_gufunc,
reduction, scan) run on the engine's worker threads holding the GIL per
block; the processes and mpi executors refuse them.
"""
import functools
import inspect
import operator
import os

import numpy as np
from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint

import strata
from .._core import DTYPES, _strata
from ..array_api.array_object import Array


def _strata_dtype(dtype):
    """Whether strata has this dtype: one of its names, in native byte
    order (zarr-python 3 gives native dtypes as explicit little-endian)."""
    d = np.dtype(dtype)
    return d.name in DTYPES and (d.byteorder in ("=", "|") or d == d.newbyteorder("="))


def _offsets(chunks):
    """Start of every block along each axis, from normalized chunks."""
    out = []
    for sizes in chunks:
        starts, at = [], 0
        for s in sizes:
            starts.append(at)
            at += s
        out.append(starts)
    return out


def _axes(axis, ndim, what):
    """axis (None, an int or a sequence) as a sorted tuple of axes >= 0."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"strata chunk manager: {what}: axis {a} is out of range for an "
                             f"array of {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"strata chunk manager: {what}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def _takes_block_id(func):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "block_id" in params


def _name(what, func):
    while isinstance(func, functools.partial):
        func = func.func
    return f"{what}-{getattr(func, '__name__', type(func).__name__)}"


def _adjusted(rule, sizes, index):
    """Dask's adjust_chunks for one index: an int (every block that size), a
    callable (of each block's size) or a tuple (one size per block), checked
    to be regular as strata's blocks are."""
    if callable(rule):
        new = tuple(int(rule(n)) for n in sizes)
    elif isinstance(rule, (int, np.integer)):
        new = (int(rule),) * len(sizes)
    else:
        new = tuple(int(n) for n in rule)
        if len(new) != len(sizes):
            raise ValueError(f"strata chunk manager: blockwise: adjust_chunks[{index!r}] gives "
                             f"{len(new)} sizes for {len(sizes)} blocks")
    if any(n < 1 for n in new) or any(n != new[0] for n in new[:-1]) or new[-1] > new[0]:
        raise NotImplementedError(f"strata chunk manager: blockwise: adjust_chunks[{index!r}] "
                                  f"gives blocks {new}; strata's blocks are regular (all the same "
                                  f"size but a shorter last one)")
    return new


def _map_shaped(fn, arrays, dtype, out_chunk, out_shape, name):
    """strata.map_blocks whose output blocks have the shape `out_chunk`
    (one size per axis) except where the inputs' last blocks are short,
    which fn's results are then too: strata's map_blocks makes every output
    block out_chunk, so short results are padded into it and the array
    sliced back to out_shape (a view: the padding is never read)."""
    out_chunk = tuple(int(c) for c in out_chunk)

    def on_blocks(*blocks, block_id=None):
        r = np.asarray(fn(*blocks, block_id=block_id), dtype=dtype)
        if r.shape == out_chunk:
            return r
        if r.ndim != len(out_chunk) or any(n > c for n, c in zip(r.shape, out_chunk)):
            raise ValueError(f"{name}: the function returned a block of shape {r.shape}, "
                             f"expected at most {out_chunk}")
        full = np.zeros(out_chunk, dtype=dtype)
        full[tuple(slice(0, n) for n in r.shape)] = r
        return full
    y = strata.map_blocks(on_blocks, *arrays, dtype=dtype, chunks=out_chunk, name=name)
    if tuple(y.shape) == tuple(out_shape):
        return y
    return y[tuple(slice(0, int(n)) for n in out_shape)]


class StrataChunkManager(ChunkManagerEntrypoint):
    """xarray's ChunkManagerEntrypoint over strata.Array (see the module
    comment). Stateless; thread-safe as strata is."""

    available = True

    def __init__(self):
        self.array_cls = Array

    def is_chunked_array(self, data):
        """Whether xarray should treat `data` as Strata's (every hook
        dispatch: get_chunked_array_type)."""
        return isinstance(data, Array)

    def chunks(self, data):
        """Variable.chunks / Dataset.chunks: the block sizes per axis."""
        return data.chunks

    def normalize_chunks(self, chunks, shape=None, limit=None, dtype=None,
                         previous_chunks=None):
        """xarray's chunk arguments (open_dataset(chunks=), .chunk(), "auto"
        with the manager's get_auto_chunk_size) as block sizes per axis, by
        strata's rules (api/chunks.h, Dask's notation)."""
        if shape is None:
            raise ValueError("normalize_chunks: strata needs the array's shape")
        dtype = np.dtype(dtype if dtype is not None else "float64")
        if not _strata_dtype(dtype):
            dtype = np.dtype("float64")   # only the block sizes are wanted
        if isinstance(chunks, (list, tuple)):
            chunks = tuple(tuple(c) if isinstance(c, (list, tuple)) else
                           (-1 if c is None else c) for c in chunks)
        # limit and previous_chunks are Dask's hints for "auto"; strata sizes
        # auto axes from the Spec's allowed_mem (api/chunks.h).
        return strata.empty(tuple(shape), dtype=dtype, chunks=chunks).chunks

    def get_auto_chunk_size(self):
        """The bytes of an "auto" block (xarray's open_dataset(chunks="auto")
        and .chunk("auto") size blocks with it): strata's own rule for the
        default Spec (api/chunks.h: allowed_mem / 8, at least 1 MiB), read
        from the engine rather than computed twice."""
        # A 1-d uint8 array of allowed_mem bytes (so a few blocks, never
        # fewer than the rule's 1 MiB floor): its auto block is the answer.
        n = max(int(strata.Spec().allowed_mem), 4 << 20)
        return int(strata.empty((n,), dtype=np.uint8, chunks="auto").chunksize[0])

    def from_array(self, data, chunks, **kwargs):
        """Variable.chunk / open_dataset(chunks=) / open_zarr: numpy data is
        shared (strata.asarray); xarray's lazy backend arrays (a Zarr
        variable being opened, with its CF decoding) become a lazy strata
        array whose blocks are read through the backend by a Python function
        (nothing read until a compute). Variables of dtypes strata has none
        for (strings, datetimes) are read into memory. `from_array_kwargs=
        {"spec": ...}` sets the arrays' Spec; Dask's other keywords (name,
        lock, ...) are ignored."""
        spec = kwargs.pop("spec", None)
        if isinstance(data, Array):
            return self.rechunk(data, chunks)
        if isinstance(data, np.ndarray) and _strata_dtype(data.dtype):
            return strata.asarray(np.ascontiguousarray(data), chunks=chunks, spec=spec)
        dtype = np.dtype(data.dtype)
        if not _strata_dtype(dtype):
            return np.asarray(data)
        stored = _stored_zarr_array(data)
        x = None
        if stored is not None:
            url, decoding = stored
            try:
                x = strata.from_zarr(url, spec=spec)
            except (ValueError, OSError, NotImplementedError):
                if not url.startswith("s3://"):
                    raise
                # metadata strata's reader refuses (a codec it lacks): the
                # backend reads it, as any other store
            if x is not None and decoding:
                x = _decoded(x, decoding)
        if x is not None and x.dtype == dtype and tuple(x.shape) == tuple(data.shape):
            wanted = self.normalize_chunks(chunks, shape=x.shape, dtype=x.dtype)
            return x if wanted == x.chunks else x.rechunk(wanted)
        return self._lazy_read(data, DTYPES[dtype.name], chunks, spec)

    def _lazy_read(self, data, dtype, chunks, spec):
        """A lazy strata array whose blocks are data[block] (xarray's lazily
        indexed backend arrays take tuples of slices)."""
        shape = tuple(int(n) for n in data.shape)
        grid = strata.empty(shape, dtype=np.bool_, chunks=chunks, spec=spec)
        starts = _offsets(grid.chunks)

        def read(block, block_id=None):
            key = tuple(slice(s[i], s[i] + n) for s, i, n in zip(starts, block_id, block.shape))
            return np.ascontiguousarray(np.asarray(data[key], dtype=dtype))
        block_bytes = dtype.itemsize * int(np.prod(grid.chunksize, dtype=np.int64))
        # The block the backend returns (copied into the task's memory), and
        # about as much again for the stored chunks it decodes to slice it.
        return strata.map_blocks(read, grid, dtype=dtype, extra_mem=2 * block_bytes,
                                 name="from_array-xarray")

    def rechunk(self, data, chunks, **kwargs):
        """Variable.chunk on a strata array (xarray's {axis: size} keeps the
        other axes' chunks): strata's rechunk plan, within allowed_mem."""
        return data.rechunk(chunks)

    def compute(self, *data, **kwargs):
        """.compute() / .load() / .values: one strata.compute for every
        strata array given (shared inputs read once); keywords are
        strata.compute's (callbacks=, ...)."""
        arrays = [d for d in data if isinstance(d, Array)]
        results = iter(strata.compute(*arrays, **kwargs) if arrays else ())
        return tuple(next(results) if isinstance(d, Array) else d for d in data)

    def persist(self, *data, **kwargs):
        """.persist(): computes now, in one strata.compute, and returns strata
        arrays over the results in memory (same chunks and Spec), so that
        what follows stays lazy and starts from memory."""
        arrays = [d for d in data if isinstance(d, Array)]
        results = iter(strata.compute(*arrays, **kwargs) if arrays else ())
        return tuple(strata.asarray(next(results), chunks=d.chunks, spec=d.spec)
                     if isinstance(d, Array) else d for d in data)

    @property
    def array_api(self):
        """xarray.full_like / zeros_like / ones_like on strata-backed objects
        (and the array functions xarray looks up): the strata namespace."""
        return strata

    # ------------------------------------------------------ functions of blocks

    def map_blocks(self, func, *args, dtype=None, chunks=None, drop_axis=None, new_axis=None,
                   **kwargs):
        """xarray's lazy CF decoding of strata-backed variables
        (coding/common.py, coding/times.py), the .dt accessor: func on
        corresponding blocks of the strata arrays among args (other
        arguments passed as they are). dtype is required (Dask infers it by
        calling func; xarray always passes it). drop_axis: those axes are
        made one block first (as Dask concatenates the blocks along them)
        and func's result lacks them. new_axis: func's result has new axes
        there, of `chunks`' size along them (1 without chunks). chunks
        (without new_axis): the output's block sizes, as many blocks as the
        input, one size per axis (strata's blocks are regular)."""
        for key in ("meta", "name", "token"):
            kwargs.pop(key, None)
        arrays, positions = self._array_args(args, "map_blocks")
        if dtype is None:
            raise ValueError("strata chunk manager: map_blocks needs the output dtype (dtype=)")
        # Arrays of fewer dimensions are aligned on the right, as Dask (and
        # numpy's broadcasting) does: size-1 axes in front, dropped again
        # before func sees their blocks.
        ndim = max(a.ndim for a in arrays)
        lead = [ndim - a.ndim for a in arrays]
        arrays = [strata.reshape(a, (1,) * k + tuple(a.shape)) if k else a
                  for a, k in zip(arrays, lead)]
        if any(lead):
            if drop_axis not in (None, [], ()) or new_axis not in (None, [], ()):
                raise NotImplementedError("strata chunk manager: map_blocks over arrays of "
                                          "different numbers of dimensions with drop_axis or "
                                          "new_axis is not supported")
            # Blocks that correspond: the first full-length array's block
            # size along every axis.
            size = [next((a.chunks[ax][0] for a in arrays if a.shape[ax] != 1), 1)
                    for ax in range(ndim)]
            arrays = [a if all(n == 1 or c[0] == k for c, n, k in zip(a.chunks, a.shape, size))
                      else a.rechunk(tuple(1 if n == 1 else k for n, k in zip(a.shape, size)))
                      for a in arrays]
        drop = _axes(drop_axis, ndim, "map_blocks drop_axis") if drop_axis not in (None, [], ()) \
            else ()
        out_ndim = ndim - len(drop)
        new = _axes(new_axis, out_ndim + (len(new_axis) if isinstance(new_axis, (list, tuple))
                                          else 1), "map_blocks new_axis") \
            if new_axis not in (None, [], ()) else ()
        if drop and new:
            raise NotImplementedError("strata chunk manager: map_blocks with both drop_axis and "
                                      "new_axis is not supported")
        block_id = _takes_block_id(func)
        call = functools.partial(func, **kwargs) if kwargs else func
        args = list(args)

        ones = [tuple(n == 1 for n in a.shape) for a in arrays]

        def own(b, k, one):
            # strata hands every input its block broadcast to the output's;
            # func gets the array's own block, as from Dask: the added
            # leading axes dropped, its length-1 axes kept at length 1
            if not k and not any(one):
                return b
            return b[tuple(0 if ax < k else slice(0, 1) if one[ax] else slice(None)
                           for ax in range(b.ndim))]

        def call_on(blocks, bid):
            full = list(args)
            for i, b, k, one in zip(positions, blocks, lead, ones):
                full[i] = own(b, k, one)
            return call(*full, block_id=bid) if block_id else call(*full)

        name = _name("map_blocks", func)
        if drop:
            arrays = [a.rechunk({ax: -1 for ax in drop}) for a in arrays]
            out_chunk = tuple(1 if i in drop else c for i, c in enumerate(arrays[0].chunksize))
            out_shape = tuple(1 if i in drop else n for i, n in enumerate(arrays[0].shape))

            def dropped(*blocks, block_id=None):
                return np.expand_dims(np.asarray(call_on(blocks, _without(block_id, drop))),
                                      drop)
            y = _map_shaped(dropped, arrays, dtype, out_chunk, out_shape, name)
            return strata.squeeze(y, axis=drop)
        if new:
            sizes = [1] * len(new)
            if chunks is not None:
                sizes = [int(np.sum(chunks[ax])) for ax in new]
            for ax in new:
                arrays = [strata.expand_dims(a, axis=ax) for a in arrays]
            out_chunk, out_shape = list(arrays[0].chunksize), list(arrays[0].shape)
            for ax, n in zip(new, sizes):
                out_chunk[ax] = out_shape[ax] = n

            def added(*blocks, block_id=None):
                blocks = [np.squeeze(b, axis=new) for b in blocks]
                return call_on(blocks, _without(block_id, new))
            return _map_shaped(added, arrays, dtype, out_chunk, out_shape, name)
        if chunks is None:
            def same(*blocks, block_id=None):
                return np.asarray(call_on(blocks, block_id), dtype=dtype)
            return strata.map_blocks(same, *arrays, dtype=dtype, name=name)
        chunks = [tuple(c) if isinstance(c, (tuple, list)) else
                  (int(c),) * len(arrays[0].chunks[i]) for i, c in enumerate(chunks)]
        if len(chunks) != ndim or any(len(c) != len(ic) for c, ic in zip(chunks, arrays[0].chunks)):
            raise ValueError(f"strata chunk manager: map_blocks: chunks {chunks!r} do not give "
                             f"every axis as many blocks as the input's {arrays[0].chunks!r}")
        return _map_shaped(lambda *blocks, block_id=None: call_on(blocks, block_id), arrays,
                           dtype, tuple(max(c) for c in chunks),
                           tuple(int(sum(c)) for c in chunks), name)

    @staticmethod
    def _array_args(args, what):
        positions = [i for i, a in enumerate(args) if isinstance(a, Array)]
        if not positions:
            raise TypeError(f"strata chunk manager: {what} needs a strata array argument")
        return [args[i] for i in positions], positions

    def apply_gufunc(self, func, signature, *args, axes=None, keepdims=False,
                     output_dtypes=None, vectorize=None, **kwargs):
        """apply_ufunc(..., dask="parallelized") on strata-backed objects:
        strata.apply_gufunc (api/gufunc.cc), with Dask's arguments (core
        dimensions whole in one block, several outputs, output_sizes,
        allow_rechunk, axes/keepdims, vectorize)."""
        if axes is None and isinstance(signature, str):
            func, signature, args = _constants_bound(func, signature, args, vectorize)
        return strata.apply_gufunc(func, signature, *args, axes=axes, keepdims=keepdims,
                                   output_dtypes=output_dtypes, vectorize=vectorize, **kwargs)

    def blockwise(self, func, out_ind, *args, adjust_chunks=None, new_axes=None,
                  align_arrays=True, concatenate=None, dtype=None, meta=None, name=None,
                  token=None, **kwargs):
        """Dask's blockwise in index notation (`out_ind`, then array, index
        pairs; literals with index None), as xarray's users call it through
        the chunk manager: func gets, for every output block, the
        corresponding block of each array, its axes in the array's own
        order, arrays lacking some output indices broadcast along them.
        Every input index must be an output index (contractions, which Dask
        concatenates, are refused). new_axes {index: size}: output indices
        no input has, one block of that size. adjust_chunks {index: int,
        callable or tuple}: func's blocks along that index have the new
        sizes (strata's blocks are regular: every block but a shorter last
        one the same size)."""
        if dtype is None and meta is not None:
            dtype = np.asarray(meta).dtype
        if dtype is None:
            raise ValueError("strata chunk manager: blockwise needs the output dtype (dtype=)")
        new_axes = dict(new_axes or {})
        adjust_chunks = dict(adjust_chunks or {})
        if len(args) % 2:
            raise ValueError("strata chunk manager: blockwise takes (array, index) pairs after "
                             "out_ind")
        out_ind = tuple(out_ind)
        if len(set(out_ind)) != len(out_ind):
            raise ValueError(f"strata chunk manager: blockwise: repeated output index in "
                             f"{out_ind!r}")
        pairs = list(zip(args[0::2], args[1::2]))
        arrays, layouts, literal = [], [], []
        spec = next((a.spec for a, _ in pairs if isinstance(a, Array)), None)
        for a, ind in pairs:
            if ind is None:
                literal.append((False, a))
                continue
            ind = tuple(ind)
            if not isinstance(a, Array):
                a = strata.asarray(np.asarray(a), spec=spec)
            if len(ind) != a.ndim:
                raise ValueError(f"strata chunk manager: blockwise: index {ind!r} for an array of "
                                 f"{a.ndim} dimensions")
            missing = [i for i in ind if i not in out_ind]
            if missing or len(set(ind)) != len(ind):
                raise NotImplementedError(
                    f"strata chunk manager: blockwise: index {ind!r} has indices the output "
                    f"{out_ind!r} lacks or repeats one (contractions are not supported)")
            # The array's axes in output order, a size-1 axis for each output
            # index it lacks: strata broadcasts it to the other inputs.
            order = sorted(range(a.ndim), key=lambda k: out_ind.index(ind[k]))
            b = strata.permute_dims(a, tuple(order)) if order != list(range(a.ndim)) else a
            for pos, i in enumerate(out_ind):
                if i not in ind:
                    b = strata.expand_dims(b, axis=pos)
            arrays.append(b)
            layouts.append((tuple(out_ind.index(i) for i in ind),
                            tuple(pos for pos, i in enumerate(out_ind) if i not in ind)))
            literal.append((True, None))
        if not arrays:
            raise TypeError("strata chunk manager: blockwise needs a strata array argument")
        given = {i for (_, ind) in pairs if ind is not None for i in ind}
        for i, n in new_axes.items():
            if i not in out_ind or i in given:
                raise ValueError(f"strata chunk manager: blockwise: new_axes index {i!r} must be "
                                 f"an output index that no input has")
            if not isinstance(n, (int, np.integer)) or n < 1:
                raise ValueError(f"strata chunk manager: blockwise: new_axes[{i!r}] must be a "
                                 f"positive int (one block), got {n!r}")
        missing = [i for i in out_ind if i not in given and i not in new_axes]
        if missing:
            raise ValueError(f"strata chunk manager: blockwise: output indices {missing!r} are "
                             f"in no input and not in new_axes")
        call = functools.partial(func, **kwargs) if kwargs else func

        def on_blocks(*blocks):
            it = iter(zip(blocks, layouts))
            full = []
            for is_array, value in literal:
                if not is_array:
                    full.append(value)
                    continue
                blk, (own, lacking) = next(it)
                # Back to the array's own axes: the broadcast ones dropped,
                # the rest in the array's order.
                blk = blk[tuple(0 if pos in lacking else slice(None) for pos in range(blk.ndim))]
                kept = [pos for pos in range(len(out_ind)) if pos not in lacking]
                full.append(np.transpose(blk, [kept.index(p) for p in own]))
            return np.asarray(call(*full), dtype=dtype)
        name = name or _name("blockwise", func)
        if not new_axes and not adjust_chunks:
            return strata.map_blocks(on_blocks, *arrays, dtype=dtype, name=name)
        # The output's blocks: the inputs' (broadcast) except where adjusted.
        in_chunks = [max((a.chunks[pos] for a in arrays if len(a.chunks[pos]) > 1
                          or a.shape[pos] > 1), key=len, default=(1,))
                     for pos in range(len(out_ind))]
        out_chunk, out_shape = [], []
        for pos, i in enumerate(out_ind):
            sizes = (new_axes[i],) if i in new_axes else tuple(in_chunks[pos])
            if i in adjust_chunks:
                sizes = _adjusted(adjust_chunks[i], sizes, i)
            out_chunk.append(max(sizes))
            out_shape.append(int(sum(sizes)))
        return _map_shaped(lambda *blocks, block_id=None: on_blocks(*blocks), arrays, dtype,
                           out_chunk, out_shape, name)

    def unify_chunks(self, *args, **kwargs):
        """xr.unify_chunks and xarray.map_blocks (structure/chunks.py):
        `array, index` pairs; every array rechunked to the common refinement
        of the chunk boundaries along each index (Dask's rule; axes of
        length 1 are left alone). Returns ({index: chunks}, arrays)."""
        if len(args) % 2:
            raise ValueError("strata chunk manager: unify_chunks takes (array, index) pairs")
        pairs = list(zip(args[0::2], args[1::2]))
        bounds, length = {}, {}
        for a, ind in pairs:
            if ind is None or not isinstance(a, Array):
                continue
            for i, c in zip(ind, a.chunks):
                n = int(sum(c))
                if n == 1 and len(c) == 1:
                    continue
                if i in length and length[i] != n:
                    raise ValueError(f"strata chunk manager: unify_chunks: index {i!r} has "
                                     f"lengths {length[i]} and {n}")
                length[i] = n
                bounds.setdefault(i, set()).update(np.cumsum(c).tolist())
        chunkss = {i: tuple(int(d) for d in np.diff([0] + sorted(b))) for i, b in bounds.items()}
        out = []
        for a, ind in pairs:
            if ind is None or not isinstance(a, Array):
                out.append(a)
                continue
            want = tuple(chunkss.get(i, c) if not (sum(c) == 1 and len(c) == 1) else c
                         for i, c in zip(ind, a.chunks))
            out.append(a if want == a.chunks else a.rechunk(want))
        for a, ind in pairs:
            if ind is not None and isinstance(a, Array):
                for i, c in zip(ind, a.chunks):
                    chunkss.setdefault(i, c)
        return chunkss, out

    # ------------------------------------------------------ reductions and scans

    def reduction(self, arr, func, combine_func=None, aggregate_func=None, axis=None,
                  dtype=None, keepdims=False, split_every=8):
        """groupby(...).first()/last() and first/last reductions on
        strata-backed objects (duck_array_ops.chunked_nanfirst/nanlast): a
        tree reduction as Dask's. func(block, axis=, keepdims=True) on every
        block; then, `split_every` partial results at a time along the
        reduced axes, combine_func (aggregate_func when None), until one
        block is left, which aggregate_func reduces (always called, as
        Dask). Every stage is one strata op; its tasks hold at most
        `split_every` partial results per block."""
        if dtype is None:
            raise ValueError("strata chunk manager: reduction needs the output dtype (dtype=)")
        if aggregate_func is None:
            raise ValueError("strata chunk manager: reduction needs aggregate_func")
        if not isinstance(arr, Array):
            raise TypeError(f"strata chunk manager: reduction of a {type(arr).__name__}, not a "
                            "strata array")
        split_every = operator.index(split_every)
        if split_every < 2:
            raise ValueError("strata chunk manager: reduction: split_every must be at least 2")
        axes = _axes(axis, arr.ndim, "reduction")
        combine_func = combine_func or aggregate_func

        def stage(x, f, what):
            def on_block(b, block_id=None):
                return f(b, axis=axes, keepdims=True)
            out_chunk = tuple(1 if i in axes else c for i, c in enumerate(x.chunksize))
            out_shape = tuple(len(c) if i in axes else n
                              for i, (c, n) in enumerate(zip(x.chunks, x.shape)))
            return _map_shaped(on_block, [x], dtype, out_chunk, out_shape,
                               _name(f"reduction-{what}", f))

        x = stage(arr, func, "chunk")
        while max((len(x.chunks[a]) for a in axes), default=1) > split_every:
            x = stage(x.rechunk({a: split_every for a in axes}), combine_func, "combine")
        x = stage(x.rechunk({a: -1 for a in axes}), aggregate_func, "aggregate")
        return x if keepdims or not axes else strata.squeeze(x, axis=axes)

    def scan(self, func, binop, ident, arr, axis=None, dtype=None, method="sequential",
             preop=None, **kwargs):
        """Dask's cumreduction (xarray's ffill/bfill push for chunked arrays
        calls it; see docs/xarray.md for when xarray does): func(block,
        axis=, dtype=) scans each block; each block's carry (preop(block,
        axis=, keepdims=True) when given, else the block's scanned last
        element) is scanned across blocks with binop from `ident`
        (exclusive), and binop(carry, block) finishes every block. Three
        strata ops of one block per task, and one over the carries (one
        element per block along the axis). method is accepted for Dask's
        signature (the result does not depend on it)."""
        if not isinstance(arr, Array):
            raise TypeError(f"strata chunk manager: scan of a {type(arr).__name__}, not a "
                            "strata array")
        if method not in ("sequential", "blelloch"):
            raise ValueError(f"strata chunk manager: scan: unknown method {method!r}")
        if kwargs:
            raise TypeError(f"strata chunk manager: scan: unexpected arguments {sorted(kwargs)}")
        if axis is None:
            arr, axis = strata.reshape(arr, (-1,)), 0
        (axis,) = _axes(axis, arr.ndim, "scan")
        dtype = np.dtype(arr.dtype if dtype is None else dtype)
        name = _name("scan", func)

        def scanned(b):
            return np.asarray(func(b, axis=axis, dtype=dtype), dtype=dtype)
        y = strata.map_blocks(scanned, arr, dtype=dtype, name=name)
        n = len(arr.chunks[axis])
        if n == 1:
            return y
        one = tuple(1 if i == axis else c for i, c in enumerate(arr.chunksize))
        carry_shape = tuple(n if i == axis else s for i, s in enumerate(arr.shape))
        if preop is not None:
            def carry(b, block_id=None):
                return preop(b, axis=axis, keepdims=True)
            carries = _map_shaped(carry, [arr], dtype, one, carry_shape, name + "-carry")
        else:
            last = (slice(None),) * axis + (slice(-1, None),)

            def carry(b, block_id=None):
                return b[last]
            carries = _map_shaped(carry, [y], dtype, one, carry_shape, name + "-carry")

        def exclusive(c):
            out = np.empty_like(c)
            acc = np.full(c[(slice(None),) * axis + (slice(0, 1),)].shape, ident, dtype=dtype)
            for i in range(c.shape[axis]):
                at = (slice(None),) * axis + (slice(i, i + 1),)
                out[at] = acc
                acc = np.asarray(binop(acc, c[at]), dtype=dtype)
            return out
        prefix = strata.map_blocks(exclusive, carries.rechunk({axis: -1}), dtype=dtype,
                                   name=name + "-prefix")
        # Each block's carry spread over the block, in y's chunks.
        which = np.repeat(np.arange(n), arr.chunks[axis])
        spread = strata.take(prefix, which, axis=axis).rechunk(y.chunks)

        def finish(b, c):
            return np.asarray(binop(c, b), dtype=dtype)
        return strata.map_blocks(finish, y, spread, dtype=dtype, name=name + "-finish")

    def shuffle(self, x, indexer, axis, chunks):
        """groupby(...).shuffle_to_chunks() / resample(...).shuffle_to_chunks():
        x reordered along `axis` so that each group (a list of indices) is
        contiguous and in one block; consecutive groups share a block up to
        the block size ("auto": x's largest block along the axis, or an
        int). One gather (only the blocks the indices touch are read) and a
        rechunk."""
        if chunks is None:
            chunks = "auto"
        target = max(x.chunks[axis]) if chunks == "auto" else chunks
        if not isinstance(target, (int, np.integer)) or target < 1:
            raise NotImplementedError(f"strata chunk manager: shuffle: chunks must be 'auto' or "
                                      f"a positive int, got {chunks!r}")
        groups = [np.asarray(g, dtype=np.int64).ravel() for g in indexer]
        if not groups or sum(len(g) for g in groups) == 0:
            raise ValueError("strata chunk manager: shuffle: no indices given")
        out = strata.take(x, np.concatenate(groups), axis=axis)
        sizes, current = [], 0
        for g in groups:
            if current and current + len(g) > target:
                sizes.append(current)
                current = 0
            current += len(g)
        sizes.append(current)
        return out.rechunk({axis: tuple(s for s in sizes if s)})

    # ------------------------------------------------------------------ storing

    def store(self, sources, targets, lock=None, compute=True, flush=False, regions=None,
              **kwargs):
        """Dataset.to_zarr (backends ArrayWriter.sync): xarray creates the
        Zarr arrays and their metadata; each source is written into its
        target's region, all in one strata.compute (keywords: strata.compute's,
        via to_zarr(chunkmanager_store_kwargs=)). Into a zarr-python 3 array
        in a LocalStore, or in an FsspecStore on s3:// whose settings strata's
        S3 store can take (_strata_url), the engine writes the chunks itself
        (strata.to_zarr); into any other store (MemoryStore, ObjectStore, a
        user's own, s3fs settings strata has no spelling for) each strata
        block is written by zarr-python (`target[region of the block] =
        block`) in a task of one op over the source's blocks (_zarr_writes).
        compute=False returns a dask.delayed object that runs that compute
        when computed (xarray wraps it with the store's close, and
        `dask.compute(delayed)` / `delayed.compute()` writes). lock is not
        needed: strata writes whole chunks, a chunk a region covers in part
        under a per-chunk lock of its own, and zarr-python's writes are of
        blocks no two of which share a chunk; flush has nothing to do (a
        chunk is in the store when its task ends)."""
        if isinstance(sources, Array):   # one source and one target, as Dask's store
            sources, targets = [sources], [targets]
            if regions is not None:
                regions = [regions]
        sources, targets = list(sources), list(targets)
        if len(sources) != len(targets):
            raise ValueError(f"strata chunk manager: store: {len(sources)} sources for "
                             f"{len(targets)} targets")
        regions = list(regions) if regions is not None else [None] * len(sources)
        handles = []
        for source, target, region in zip(sources, targets, regions):
            if not isinstance(source, Array):
                raise TypeError(f"strata chunk manager: store: a {type(source).__name__} "
                                "source, not a strata array")
            region = tuple(region) if region is not None else None
            url = _strata_url(target)
            if url is not None:
                handles.append(strata.to_zarr(source, url, region=region, compute=False))
            else:
                handles.append(_zarr_writes(source, target, region))
        if compute:
            strata.compute(*handles, **kwargs)
            return None
        import dask

        def write():
            strata.compute(*handles, **kwargs)
        # pure=False: a key of its own, without hashing the strata arrays.
        return dask.delayed(write, pure=False)()


def _target_name(target):
    """The target as an error names it: its store and path."""
    store = getattr(target, "store", None)
    path = getattr(target, "path", "") or ""
    where = str(store) if store is not None else type(target).__name__
    return f"{where}/{path}" if path else where


def _write_chunks(target):
    """The target's chunks that zarr-python writes whole (a shard when the
    array is sharded: two writers of one shard would race too)."""
    shards = getattr(target, "shards", None)
    chunks = shards if shards is not None else getattr(target, "chunks", None)
    if chunks is None:
        return None
    return tuple(int(c) for c in chunks)


def _zarr_writes(source, target, region):
    """An op over source's blocks whose task for each block writes it into
    target (any zarr-python array) at its place in `region` (xarray's
    tuple of slices, or None: all of target) with zarr-python's own
    `target[...] = block`; its value is one bool per block, which the
    compute returns and the caller drops. The block's bytes and about as
    much again (zarr-python's encoded copy) are the task's memory beyond
    its input, so the plan's check against allowed_mem counts them.

    Two blocks writing parts of one Zarr chunk would race (each reads,
    updates and writes the whole chunk), so blocks that share a chunk of
    target are refused with a ValueError before anything is written:
    rechunk to multiples of the Zarr chunks (xarray's safe_chunks=True
    refuses such chunks first, unless turned off)."""
    name = _target_name(target)
    shape = tuple(int(n) for n in getattr(target, "shape", source.shape))
    if region is None:
        region = tuple(slice(0, n) for n in shape)
    origin = []
    for axis, (r, n) in enumerate(zip(region, shape)):
        start, stop, step = r.indices(n) if isinstance(r, slice) else (int(r), int(r) + 1, 1)
        if step != 1 or stop - start != source.shape[axis]:
            raise ValueError(f"strata chunk manager: store into {name}: region {region!r} does "
                             f"not match the source's shape {tuple(source.shape)}")
        origin.append(start)
    if len(origin) != source.ndim:
        raise ValueError(f"strata chunk manager: store into {name}: region {region!r} does not "
                         f"match the source's shape {tuple(source.shape)}")
    chunks = _write_chunks(target)
    starts = _offsets(source.chunks)
    if chunks is not None:
        for axis, (o, c, sizes) in enumerate(zip(origin, chunks, source.chunks)):
            owner = {}
            for b, (s, n) in enumerate(zip(starts[axis], sizes)):
                if n == 0:
                    continue
                for k in range((o + s) // c, (o + s + n - 1) // c + 1):
                    if owner.setdefault(k, b) != b:
                        raise ValueError(
                            f"strata chunk manager: store into {name}: the source's blocks "
                            f"{tuple(sizes)} along axis {axis} (from {o}) share Zarr chunks of "
                            f"{c}, which two tasks would write at once; rechunk the data to "
                            f"multiples of {c} along that axis (xarray's safe_chunks=True "
                            "checks this)")
    block_bytes = source.dtype.itemsize * int(np.prod(source.chunksize, dtype=np.int64))

    def write(block, block_id=None):
        key = tuple(slice(o + s[i], o + s[i] + n)
                    for o, s, i, n in zip(origin, starts, block_id, block.shape))
        try:
            target[key] = block
        except Exception as e:
            text = " ".join(str(e).split()) or type(e).__name__
            raise OSError(f"strata chunk manager: store into {name}: writing block "
                          f"{tuple(block_id)}: {type(e).__name__}: {text}") from e
        return np.ones((1,) * block.ndim, dtype=np.bool_)
    return strata.map_blocks(write, source, dtype=np.bool_, chunks=(1,) * source.ndim,
                             extra_mem=2 * block_bytes, name="store-zarr-python")


def _strata_url(target, reading=False):
    """Where strata's own Zarr writer can write the zarr-python 3 array
    xarray created (or, reading, where strata's reader can read the one
    xarray opened): a LocalStore's directory, or the s3:// URL (with the
    endpoint and region as its query) of an FsspecStore over s3fs whose
    settings strata's S3 store takes the same way; None for anything else
    (zarr-python writes those, _zarr_writes; xarray's backend reads them)."""
    try:
        return _zarr_array_url(target)
    except NotImplementedError:
        pass
    store = getattr(target, "store", None)
    if type(store).__name__ != "FsspecStore" or \
            (getattr(store, "read_only", False) and not reading):
        return None
    fs = getattr(store, "fs", None)
    protocol = getattr(fs, "protocol", None)
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    if type(fs).__name__ != "S3FileSystem" or not {"s3", "s3a"} & set(protocols):
        return None
    query = _s3_query(dict(getattr(fs, "storage_options", {}) or {}))
    if query is None:
        return None
    path = "/".join(p.strip("/") for p in (store.path, getattr(target, "path", "") or "")
                    if p.strip("/"))
    if "/" not in path:
        return None   # a bucket's root: strata's URLs name a prefix
    url = f"s3://{path}"
    return f"{url}?{'&'.join(f'{k}={v}' for k, v in query.items())}" if query else url


# s3fs settings that change nothing about where and how objects are written.
_S3FS_NEUTRAL = {"asynchronous", "loop", "skip_instance_cache", "use_listings_cache",
                 "listings_expiry_time", "max_paths", "default_block_size", "default_fill_cache",
                 "default_cache_type", "cache_regions", "version_aware"}


def _s3_query(options):
    """s3fs's storage options as strata's S3 URL query ({} when it has
    nothing to add), or None when strata's S3 store would not write where
    and as s3fs would: credentials that are not the ones strata's chain
    finds first (strata takes none in a URL), or options it has no
    spelling for (requester pays, extra request arguments, botocore config)."""
    client = dict(options.pop("client_kwargs", None) or {})
    query = {}
    endpoint = options.pop("endpoint_url", None) or client.pop("endpoint_url", None)
    region = client.pop("region_name", None)
    if client:
        return None
    if endpoint:
        if any(ch in str(endpoint) for ch in "&?# "):
            return None
        query["endpoint"] = str(endpoint).rstrip("/")
    if region:
        query["region"] = str(region)
    if options.pop("anon", False):
        query["anon"] = "true"
    profile = options.pop("profile", None)
    if profile:
        query["profile"] = str(profile)
    key, secret = options.pop("key", None), options.pop("secret", None)
    token = options.pop("token", None)
    if key is not None or secret is not None or token is not None:
        # strata reads the environment's AWS_* keys first (unless a profile
        # is named): the same keys are the same credentials.
        if profile or "anon" in query or \
                (key, secret, token) != (os.environ.get("AWS_ACCESS_KEY_ID"),
                                         os.environ.get("AWS_SECRET_ACCESS_KEY"),
                                         os.environ.get("AWS_SESSION_TOKEN")):
            return None
    if any(k not in _S3FS_NEUTRAL for k in options):
        return None
    return query


def _stored_zarr_array(data):
    """(url, decoding) for the Zarr array behind one of xarray's lazy backend
    arrays, else None. url: where strata's reader finds it (a local path, or
    an s3:// URL for s3fs settings strata's S3 store takes alike:
    _strata_url). decoding: xarray's CF decoding of the variable (masking
    fill values, scale and offset, signedness), as a list of (func, dtype)
    from the stored array outwards, each elementwise (xarray's
    lazy_elemwise_func); empty when the variable is the array as stored.
    Anything else between them (a selection, another wrapper): None. Read
    by strata.from_zarr, the array is a source op read by the engine (C++,
    no GIL) where a read through the backend (_lazy_read) is a Python
    function per block."""
    from xarray.backends.zarr import ZarrArrayWrapper
    from xarray.coding.common import _ElementwiseFunctionArray
    from xarray.core.indexing import (CopyOnWriteArray, ImplicitToExplicitIndexingAdapter,
                                      LazilyIndexedArray, MemoryCachedArray)
    a = data
    decoding = []
    while True:
        if isinstance(a, (ImplicitToExplicitIndexingAdapter, CopyOnWriteArray,
                          MemoryCachedArray)):
            a = a.array
        elif isinstance(a, LazilyIndexedArray):
            if any(k != slice(None) for k in a.key.tuple):
                return None
            a = a.array
        elif isinstance(a, _ElementwiseFunctionArray):
            decoding.append((a.func, np.dtype(a.dtype)))
            a = a.array
        else:
            break
    if not isinstance(a, ZarrArrayWrapper):
        return None
    z = a._array
    decoding.reverse()
    stored_dtype = decoding[-1][1] if decoding else np.dtype(z.dtype)
    if stored_dtype != np.dtype(data.dtype) or tuple(z.shape) != tuple(data.shape):
        return None
    url = _strata_url(z, reading=True)
    return (url, decoding) if url is not None else None


def _decoded(x, decoding):
    """x (the stored array) with xarray's CF decoding applied block by block:
    each function is elementwise, so a block of the result is the function
    of the same block of x; a pointwise selection after it runs only the
    blocks its points fall in (the engine prunes the others: PrunedTasks)."""
    for func, dtype in decoding:
        if not _strata_dtype(dtype):
            return None
        # xarray's functions copy the block into the new dtype and build a
        # mask of the fill values (numpy's memory, not the engine's
        # buffers): about two output blocks more at their peak.
        block_bytes = np.dtype(dtype).itemsize * int(np.prod(x.chunksize, dtype=np.int64))
        x = strata.map_blocks(_Elementwise(func), x, dtype=DTYPES[dtype.name],
                              extra_mem=2 * block_bytes, name="cf-decode")
    return x


class _Elementwise:
    """One of xarray's CF decoding functions on a block (a picklable
    callable, for the dask executor)."""

    def __init__(self, func):
        self.func = func

    def __call__(self, block):
        return np.ascontiguousarray(self.func(block))


def _constants_bound(func, signature, args, vectorize):
    """(func, signature, args) with the arguments that are in memory and
    have core dimensions only (xarray's interp passes its coordinates so)
    bound into func and left out of the signature: func gets them whole and
    as they are, as from Dask, instead of broadcast over the loop
    dimensions of the arrays. With vectorize, nothing is bound (numpy's
    vectorize loops over every argument)."""
    if vectorize:
        return func, signature, args
    input_cores, output_cores = _strata.gufunc_signature(signature)
    if len(input_cores) != len(args):
        return func, signature, args   # strata.apply_gufunc names the mismatch
    bound = {i: a for i, (a, core) in enumerate(zip(args, input_cores))
             if not isinstance(a, Array) and np.ndim(a) == len(core) and core}
    if not bound or len(bound) == len(args):
        return func, signature, args

    def with_constants(*blocks, **kwargs):
        it = iter(blocks)
        full = [bound[i] if i in bound else next(it) for i in range(len(args))]
        return func(*full, **kwargs)
    with_constants.__name__ = getattr(func, "__name__", "function")

    def text(cores):
        return ",".join("(" + ",".join(c) + ")" for c in cores)
    kept = [c for i, c in enumerate(input_cores) if i not in bound]
    new_signature = text(kept) + "->" + text(output_cores)
    return with_constants, new_signature, [a for i, a in enumerate(args) if i not in bound]


def _without(block_id, axes):
    if block_id is None:
        return None
    return tuple(b for i, b in enumerate(block_id) if i not in axes)


@functools.lru_cache(maxsize=1)
def chunk_manager():
    """The StrataChunkManager instance (for `chunked_array_type=` when the
    entry point is not installed)."""
    return StrataChunkManager()


def _zarr_array_url(target):
    """Where a zarr-python 3 array xarray created lives, as a strata path
    (a LocalStore's directory and the array's path in it)."""
    store = getattr(target, "store", None)
    path = getattr(target, "path", "") or ""
    root = getattr(store, "root", None)
    if type(store).__name__ == "LocalStore" and root is not None:
        return os.path.join(str(root), path) if path else str(root)
    raise NotImplementedError(f"strata chunk manager: a zarr-python {type(store).__name__} "
                              "is not a local directory")


# ------------------------------------------------------------------ ffill

def _ffill_block(a, axis, limit=None, dtype=None):
    """numpy's forward fill of NaNs along axis (bottleneck's push, without
    bottleneck): each NaN takes the last valid value before it, at most
    `limit` places back."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    valid = ~np.isnan(a)
    at = np.arange(a.shape[-1])
    last = np.where(valid, at, 0)
    np.maximum.accumulate(last, axis=-1, out=last)
    out = np.take_along_axis(a, last, axis=-1)
    if limit is not None:
        out = np.where(at - last <= limit, out, np.nan)
    return np.moveaxis(out, -1, axis)


def _fill_with_last(carry, block):
    return np.where(np.isnan(block), carry, block)


def push(x, axis, limit=None):
    """x with its NaNs forward filled along `axis` (xarray's ffill, lazily):
    without a limit, the chunk manager's scan (a fill within each block, the
    last valid value of each block carried across blocks); with one no
    larger than every block along the axis, each block with `limit`
    elements of the block before it (strata.map_overlap), as Dask's push."""
    if x.dtype.kind not in "fc":
        return x   # nothing is NaN
    axis = _axes(axis, x.ndim, "ffill")[0]
    if limit is None or limit >= x.shape[axis]:
        return chunk_manager().scan(_ffill_block, _fill_with_last, np.nan, x, axis=axis,
                                    dtype=x.dtype)
    limit = operator.index(limit)
    if limit < 1:
        raise ValueError(f"ffill: limit must be at least 1, got {limit}")
    if limit > min(x.chunks[axis]):
        raise NotImplementedError(f"ffill: a limit ({limit}) larger than a block along the "
                                  f"axis ({min(x.chunks[axis])}): rechunk first, or give no "
                                  "limit")
    depth = tuple((limit, 0) if i == axis else (0, 0) for i in range(x.ndim))
    return strata.map_overlap(functools.partial(_ffill_block, axis=axis, limit=limit), x,
                              depth=depth, boundary="none", dtype=x.dtype)


def fill(x, axis, limit=None, backward=False):
    """push forward, or backward (the axis flipped around it: xarray's bfill)."""
    if not backward:
        return push(x, axis, limit)
    return strata.flip(push(strata.flip(x, axis=axis), axis, limit), axis=axis)
