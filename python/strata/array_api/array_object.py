"""strata.Array: a lazy chunked array, an Array API array.

Building an Array never touches data; compute(), numpy conversion and the
scalar conversions (bool(x), float(x), ...) run the plan.

This module is the bottom of the namespace's layers: the chapter modules
beside it (creation_functions, statistical_functions, ...) build on it, and
it imports only the layers below it, which work on engine handles
(_ops, _indexing, _execute, _zarr_io, _blocks). A method that has a
namespace function of the same name runs that function's code path and has
its semantics (`x.sum(axis=0)` is `strata.sum(x, axis=0)`); the numpy-only
spellings a method also takes (a positional axis, ddof=) are named in its
docstring and in docs/python-api.md.

numpy's protocols (__array_function__, __array_ufunc__) look their handlers
up in NUMPY_FUNCTIONS and NUMPY_UFUNC_METHODS, which _numpy_protocol.py
fills when strata is imported (NEP 18's registration pattern: the protocol
module is above every namespace module it maps numpy's functions to).
"""
import operator
import sys

import numpy as np

from .. import _blocks, _core, _execute, _indexing, _ops, _zarr_io
from .._core import _strata
from .._spec import Spec


# The Array API versions __array_namespace__ accepts (strata's is the last).
_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _wrap(handle):
    a = Array.__new__(Array)
    a._h = handle
    return a


def _as_operand(x, what):
    """An Array's handle, a Python scalar as it is, or a numpy array/scalar as
    an Array (zero-copy). TypeError for anything else."""
    if isinstance(x, Array):
        return x._h
    if _core.is_python_scalar(x):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return _indexing.handle_of_numpy(x)
    raise TypeError(f"{what}: unsupported operand type {type(x).__name__} "
                    "(expected a strata.Array, a numpy array or a Python scalar)")


# For an out-of-range Python int beside an integer array, the answer of
# `array OP int` when the int is above the dtype's range (below: the
# negation, except for equal and not_equal, whose answer is the same).
_ABOVE = {"equal": False, "not_equal": True, "less": True, "less_equal": True,
          "greater": False, "greater_equal": False}
_SWAPPED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
            "greater_equal": "less_equal"}


def _weak_int(name, v, array, int_first):
    """NEP 50 for a Python int `v` meeting `array` (a handle) in op `name`:
    the operand to pass on, or a finished Array.

    The int takes the array's dtype (the engine's rule) and must fit it: out
    of an integer dtype's range it raises numpy 2's OverflowError, except in
    comparisons, which numpy 2 answers exactly (every element compares the
    same way), and so does this. Beyond int64, where the engine's scalars
    end, it is a 0-d uint64 array beside uint64 and a float beside floats."""
    dtype = np.dtype(array.dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if info.min <= v <= info.max:
            return np.asarray(v, dtype=dtype) if v > np.iinfo(np.int64).max else v
        if name in _ABOVE:
            op = _SWAPPED.get(name, name) if int_first else name
            answer = _ABOVE[op] if v > info.max or op in ("equal", "not_equal") \
                else not _ABOVE[op]
            return _wrap(_strata.full_like(array, answer, "bool", None))
        raise OverflowError(f"Python integer {v} out of bounds for {dtype}")
    if dtype.kind in "fc" and not -2**63 <= v < 2**63:
        return float(v)
    if not -2**63 <= v < 2**63:
        raise OverflowError(f"Python integer {v} out of bounds for int64")
    return v


def _binary(name, a, b):
    ha, hb = _as_operand(a, name), _as_operand(b, name)
    if type(ha) is int and isinstance(hb, _strata.Array):
        ha = _weak_int(name, ha, hb, True)
    elif type(hb) is int and isinstance(ha, _strata.Array):
        hb = _weak_int(name, hb, ha, False)
    for i, h in enumerate((ha, hb)):
        if isinstance(h, Array):  # a comparison answered already
            return h
        if isinstance(h, np.ndarray):
            if i == 0:
                ha = _indexing.handle_of_numpy(h)
            else:
                hb = _indexing.handle_of_numpy(h)
    return _wrap(_strata.binary(name, ha, hb))


def _operator(name, reflected=False):
    def op(self, other):
        if not (isinstance(other, (Array, np.ndarray, np.generic)) or
                _core.is_python_scalar(other)):
            return NotImplemented
        return _binary(name, other, self) if reflected else _binary(name, self, other)
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


_POW = _operator("pow")


def _inplace(name, symbol):
    """x op= y: x becomes x op y (a new lazy array under the same Python
    object, as with setitem), which must keep x's dtype and shape (the Array
    API's rule for in-place operators)."""
    def op(self, other):
        if name == "matmul":
            r = self.__matmul__(other)
            if r is NotImplemented:
                return r
        else:
            if not (isinstance(other, (Array, np.ndarray, np.generic)) or
                    _core.is_python_scalar(other)):
                return NotImplemented
            r = _binary(name, self, other)
        if r.dtype != self.dtype:
            raise TypeError(f"x {symbol}= y would change x's dtype from {self.dtype} to "
                            f"{r.dtype}; write x = x {symbol} y")
        if r.shape != self.shape:
            raise ValueError(f"x {symbol}= y would change x's shape from {self.shape} to "
                             f"{r.shape}; write x = x {symbol} y")
        self._h = r._h
        return self
    op.__name__ = f"__i{name}__"
    return op


def _called_from(module, names, depth):
    """True when one of the `depth` frames above the Array method calling
    this runs one of `names` (functions of `module`, dotted for methods):
    a library about to compute a whole Array in this process, refused
    before anything runs. A module not yet imported is not looked up."""
    mod = sys.modules.get(module)
    codes = set()
    for name in names:
        obj = mod
        for part in name.split("."):
            obj = getattr(obj, part, None)
        if getattr(obj, "__code__", None) is not None:
            codes.add(obj.__code__)
    if not codes:
        return False
    try:
        frame = sys._getframe(2)  # 0: here, 1: the Array method, 2: its caller
    except ValueError:  # called from C with no Python caller
        return False
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


# numpy.vectorize converts an Array (__array__) to loop over its elements in
# Python: the whole array computed, the silent compute strata refuses
# elsewhere. Its methods that convert, called directly or from a
# comprehension inside them.
_VECTORIZE = (np.vectorize.__module__, ("vectorize._vectorize_call",
                                        "vectorize._vectorize_call_with_signature",
                                        "vectorize._get_ufunc_and_otypes"), 3)

# flox's in-memory group-by (flox.core.chunk_reduce, run on every array flox
# does not know as Dask or Cubed) reshapes an Array first, then computes it
# whole and reduces it in this process.
_FLOX = ("flox.core", ("chunk_reduce",), 1)
_FLOX_REFUSED = (
    "xarray's group-by through flox cannot run on strata arrays: flox computes any array that "
    "is neither Dask nor Cubed whole in memory (numpy_groupies); use "
    "`with xr.set_options(use_flox=False):` (one grouped strata reduction) or "
    "`ds.strata.groupby(...)`")

# xarray's in-memory forward fill (duck_array_ops._push) converts an Array
# for bottleneck.push (in _push itself) or numbagg.ffill (a call or two
# below): the whole array computed in this process.
_XARRAY_PUSH = ("xarray.core.duck_array_ops", ("_push",), 4)
_PUSH_REFUSED = (
    "xarray's ffill/bfill would compute the whole array in this process: xarray fills a "
    "chunked array lazily only when it is Dask's (duck_array_ops.push) and gives any other "
    "array to bottleneck or numbagg whole; use ds.strata.ffill(dim) / ds.strata.bfill(dim), "
    "which fill block by block within allowed_mem")


class _ArrayBase:
    """strata.Array's base. Empty: it exists so that strata.xarray can add
    xarray's ExplicitlyIndexed protocol to Array's bases when it is imported
    (xarray/_indexing.py); a class whose only base is `object` cannot gain
    one."""

    __slots__ = ()


class Array(_ArrayBase):
    """A lazy chunked array (strata.Array). See the module docstring.

    Thread-safety: an Array is a handle to an immutable plan node; setitem
    and the in-place operators rebind the handle of this Python object only,
    so an Array shared between threads must not be assigned into."""

    __slots__ = ("_h", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("strata.Array is not built directly: use strata.asarray, "
                        "strata.from_array, strata.zeros, strata.from_zarr, ...")

    # ---------------------------------------------------------------- attributes
    @property
    def shape(self):
        return self._h.shape

    @property
    def dtype(self):
        return _core.to_dtype(self._h.dtype)

    @property
    def ndim(self):
        return len(self._h.shape)

    @property
    def size(self):
        n = 1
        for d in self._h.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self._h.nbytes

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def device(self):
        return "cpu"

    def to_device(self, device, /, *, stream=None):
        if device != "cpu":
            raise ValueError(f"strata arrays live on the 'cpu' device, not {device!r}")
        return self

    @property
    def chunks(self):
        """Block sizes per axis, as Dask gives them: ((5, 5, 2), (10,))."""
        return self._h.chunks

    @property
    def chunksize(self):
        return self._h.chunksize

    @property
    def numblocks(self):
        return self._h.numblocks

    @property
    def npartitions(self):
        n = 1
        for b in self._h.numblocks:
            n *= b
        return n

    @property
    def name(self):
        return self._h.name

    @property
    def spec(self):
        return Spec._from_cpp(self._h.spec)

    @property
    def T(self):
        if self.ndim != 2:
            raise ValueError(f"x.T is for 2-d arrays (this one has {self.ndim} dimensions); "
                             "use strata.permute_dims")
        return _wrap(_strata.permute_dims(self._h, [1, 0]))

    @property
    def mT(self):
        return _wrap(_strata.matrix_transpose(self._h))

    @property
    def real(self):
        return _wrap(_strata.unary("real", self._h))

    @property
    def imag(self):
        return _wrap(_strata.unary("imag", self._h))

    def conj(self):
        return _wrap(_strata.unary("conj", self._h))

    def __array_namespace__(self, /, *, api_version=None):
        """The strata module: the Array API 2024.12 (the earlier versions
        asked for are its subsets)."""
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(f"strata implements the Array API {', '.join(_API_VERSIONS)}, "
                             f"not {api_version!r}")
        # The namespace is the package this module is part of, imported
        # before any of its modules (no import: it is there).
        return sys.modules[__package__.partition(".")[0]]

    def __repr__(self):
        return (f"strata.Array<{self.name}, shape={self.shape}, dtype={self.dtype}, "
                f"chunksize={self.chunksize}>")

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    # ----------------------------------------------------------------- operators
    __add__ = _operator("add")
    __radd__ = _operator("add", True)
    __sub__ = _operator("subtract")
    __rsub__ = _operator("subtract", True)
    __mul__ = _operator("multiply")
    __rmul__ = _operator("multiply", True)
    __truediv__ = _operator("divide")
    __rtruediv__ = _operator("divide", True)
    __floordiv__ = _operator("floor_divide")
    __rfloordiv__ = _operator("floor_divide", True)
    __mod__ = _operator("remainder")
    __rmod__ = _operator("remainder", True)
    def __pow__(self, other):
        """x ** y. As numpy's fast scalar power: a float or complex array to
        the Python scalar power 2 is x * x (numpy's square, exact, where
        pow() may be an ulp off), and to the power 0.5 is sqrt(x) (exact, and
        several times cheaper than pow(); sqrt(-0.0) is -0.0 as in numpy)."""
        if type(other) in (int, float) and np.dtype(self.dtype).kind in "fc":
            if other == 2:
                return _binary("multiply", self, self)
            if other == 0.5:
                return _wrap(_strata.unary("sqrt", self._h))
        return _POW(self, other)
    __rpow__ = _operator("pow", True)
    __and__ = _operator("bitwise_and")
    __rand__ = _operator("bitwise_and", True)
    __or__ = _operator("bitwise_or")
    __ror__ = _operator("bitwise_or", True)
    __xor__ = _operator("bitwise_xor")
    __rxor__ = _operator("bitwise_xor", True)
    __lshift__ = _operator("bitwise_left_shift")
    __rlshift__ = _operator("bitwise_left_shift", True)
    __rshift__ = _operator("bitwise_right_shift")
    __rrshift__ = _operator("bitwise_right_shift", True)
    __eq__ = _operator("equal")
    __ne__ = _operator("not_equal")
    __lt__ = _operator("less")
    __le__ = _operator("less_equal")
    __gt__ = _operator("greater")
    __ge__ = _operator("greater_equal")
    __hash__ = None

    def __matmul__(self, other):
        if not isinstance(other, (Array, np.ndarray)):
            return NotImplemented
        return _wrap(_strata.matmul(self._h, as_array(other, "matmul")._h))

    def __rmatmul__(self, other):
        if not isinstance(other, (Array, np.ndarray)):
            return NotImplemented
        return _wrap(_strata.matmul(as_array(other, "matmul")._h, self._h))

    def __neg__(self):
        return _wrap(_strata.unary("negative", self._h))

    def __pos__(self):
        return _wrap(_strata.unary("positive", self._h))

    def __abs__(self):
        return _wrap(_strata.unary("abs", self._h))

    def __invert__(self):
        return _wrap(_strata.unary("bitwise_invert", self._h))

    __iadd__ = _inplace("add", "+")
    __isub__ = _inplace("subtract", "-")
    __imul__ = _inplace("multiply", "*")
    __itruediv__ = _inplace("divide", "/")
    __ifloordiv__ = _inplace("floor_divide", "//")
    __imod__ = _inplace("remainder", "%")
    __ipow__ = _inplace("pow", "**")
    __iand__ = _inplace("bitwise_and", "&")
    __ior__ = _inplace("bitwise_or", "|")
    __ixor__ = _inplace("bitwise_xor", "^")
    __ilshift__ = _inplace("bitwise_left_shift", "<<")
    __irshift__ = _inplace("bitwise_right_shift", ">>")
    __imatmul__ = _inplace("matmul", "@")

    def __setitem__(self, key, value):
        """x[key] = value: x becomes a new lazy array with those elements
        replaced (Dask's semantics; there are no views, so arrays derived
        from x before keep their values)."""
        self._h = _indexing.setitem(self._h, _key_handles(key), _as_operand(value, "setitem"))

    def __getitem__(self, key):
        """x[key] with numpy's semantics (_indexing.getitem)."""
        return _wrap(_indexing.getitem(self._h, _key_handles(key)))

    @property
    def vindex(self):
        """Pointwise selection, as Dask's: x.vindex[ilat, ilon]."""
        return _VIndexer(self)

    # ------------------------------------------------- conversions (they compute)
    def compute(self, *, callbacks=None, optimize_graph=True, **kwargs):
        """Runs the plan; returns a numpy array over the engine's buffer
        (strata.compute(x, ...)[0])."""
        return _execute.run([self._h], callbacks, optimize_graph, **kwargs)[0]

    def _scalar(self, kind):
        if self.ndim != 0 and self.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python scalars "
                            f"({kind}(); this one has shape {self.shape})")
        return self.compute().reshape(()).item()

    def __bool__(self):
        return bool(self._scalar("bool"))

    def __int__(self):
        if self.dtype.kind == "c":
            raise TypeError("int() of a complex array")
        v = self._scalar("int")
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise (ValueError if v != v else OverflowError)(f"cannot convert {v} to int")
        return int(v)

    def __float__(self):
        if self.dtype.kind == "c":
            raise TypeError("float() of a complex array")
        return float(self._scalar("float"))

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __index__(self):
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return operator.index(self._scalar("index"))

    def __array__(self, dtype=None, copy=None):
        """numpy's conversion (np.asarray(x), numpy 2's signature): computes x.
        Each compute gives a new buffer, shared with nothing, so copy=True
        costs no second copy; copy=False (share x's memory, never copy)
        cannot hold for a lazy array, which has none: ValueError, as numpy
        raises when a copy cannot be avoided."""
        if copy is False:
            raise ValueError("a strata.Array is lazy and has no memory to share: converting it "
                             "computes a new array, so copy=False cannot be honoured (use "
                             "np.asarray(x) or x.compute())")
        if _called_from(*_VECTORIZE):
            raise NotImplementedError(
                "numpy.vectorize on a strata.Array would compute the whole array and call its "
                "function element by element in this process; use strata.apply_gufunc(func, "
                "signature, x, vectorize=True), which runs it block by block on the workers "
                "(xarray's apply_ufunc(..., vectorize=True) calls numpy.vectorize)")
        if _called_from(*_XARRAY_PUSH):
            raise NotImplementedError(_PUSH_REFUSED)
        a = self.compute()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The computed result, exported by numpy's __dlpack__ (the 2023.12
        signature; max_version picks the versioned capsule). BufferError for
        a device other than the CPU, and for copy=False: the export is a new
        buffer, never x's memory (a lazy array has none)."""
        if stream is not None:
            raise BufferError("strata arrays live on the CPU: stream must be None")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"strata arrays live on the CPU (1, 0), not device {dl_device}")
        if copy is False:
            raise BufferError("a strata.Array is lazy and has no memory to share: exporting it "
                              "computes a new array, so copy=False cannot be honoured")
        return self.compute().__dlpack__(max_version=max_version, dl_device=dl_device)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    # -------------------------------------------------- conveniences (Dask names)
    def rechunk(self, chunks):
        """Dask's Array.rechunk: a dict {axis: size} changes those axes only;
        the others (and any given as None) keep their chunks, as in Dask."""
        if isinstance(chunks, dict):
            kept = list(self.chunksize)
            for axis, c in chunks.items():
                a = _core.axis_index(axis, self.ndim, "rechunk")
                if c is not None:
                    kept[a] = c
            chunks = tuple(kept)
        return _wrap(_strata.rechunk(self._h, _core.chunks_arg(chunks, self.ndim)))


    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True, *,
               device=None):
        """x as `dtype` (strata.astype). copy=False returns x itself when the
        dtype is x's; copy=True always a new Array object (lazy arrays share
        their data, but setitem rebinds the object, which must not be x).
        numpy's order, casting and subok are accepted (xarray passes them)
        and change nothing."""
        if device not in (None, "cpu"):
            raise ValueError(f"astype: strata arrays live on the 'cpu' device, not {device!r}")
        h = _ops.astype(self._h, dtype)
        return self if h is self._h and not copy else _wrap(h)

    def reshape(self, *shape, copy=None, order="C"):
        """strata.reshape(x, shape); numpy's x.reshape(2, 3) spelling too, and
        numpy's `order` keyword in its default "C" only. flox's in-memory
        group-by reshapes here first (see _FLOX): a one-line
        error naming the spellings that stay lazy, before anything runs."""
        if _called_from(*_FLOX):
            raise NotImplementedError(_FLOX_REFUSED)
        if order != "C":
            raise ValueError(f"reshape: strata arrays are reshaped in C order only, not "
                             f"order={order!r}")
        if copy is False:
            raise ValueError("reshape: strata arrays are lazy; copy=False cannot be promised")
        shape = shape[0] if len(shape) == 1 else shape
        return _wrap(_strata.reshape(self._h, list(_core.shape_tuple(shape))))

    def squeeze(self, axis=None):
        """strata.squeeze(x, axis); axis=None (numpy's default) drops every
        axis of length 1."""
        if axis is None:
            axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
        axes = _core.axes_arg(axis, self.ndim)
        return self if not axes else _wrap(_strata.squeeze(self._h, axes))

    def transpose(self, *axes):
        """numpy's x.transpose(): strata.transpose(x, axes), the axes reversed
        when none are given."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        if not axes:
            axes = range(self.ndim - 1, -1, -1)
        perm = []
        for a in axes:
            a = operator.index(a)
            if not -self.ndim <= a < self.ndim:
                raise np.exceptions.AxisError(f"transpose: axis {a} is out of bounds for an "
                                              f"array of dimension {self.ndim}")
            perm.append(a % self.ndim)
        return _wrap(_strata.permute_dims(self._h, perm))

    def swapaxes(self, axis1, axis2):
        """numpy's x.swapaxes (numpy.swapaxes)."""
        a = _core.axis_index(axis1, self.ndim, "swapaxes")
        b = _core.axis_index(axis2, self.ndim, "swapaxes")
        perm = list(range(self.ndim))
        perm[a], perm[b] = perm[b], perm[a]
        return _wrap(_strata.permute_dims(self._h, perm))

    def ravel(self):
        """numpy's x.ravel(): x as 1-d, in C order (lazy)."""
        return _wrap(_strata.reshape(self._h, [self.size]))

    flatten = ravel

    def copy(self):
        """A new Array object over the same lazy array: lazy arrays are
        immutable (setitem rebinds the Python object), so a copy, deep or
        not, shares the plan node."""
        return _wrap(self._h)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    # ------------------------------------------------------------- reductions
    # Each is the namespace function of its name (strata.sum(x, ...) calls
    # x.sum(...)). The axis may be given by position, as numpy code does.

    def sum(self, axis=None, *, dtype=None, keepdims=False, split_every=None):
        """strata.sum: accumulated and returned in `dtype` when given."""
        return _wrap(_ops.sum_like("sum", self._h, axis, dtype, keepdims, split_every))

    def prod(self, axis=None, *, dtype=None, keepdims=False, split_every=None):
        """strata.prod: accumulated and returned in `dtype` when given."""
        return _wrap(_ops.sum_like("prod", self._h, axis, dtype, keepdims, split_every))

    def mean(self, axis=None, *, dtype=None, keepdims=False, split_every=None):
        """strata.mean; numpy's dtype= casts x to it first."""
        h = _ops.in_dtype(self._h, dtype, "mean")
        return _wrap(_ops.reduce("mean", h, axis, keepdims, split_every=split_every))

    def min(self, axis=None, *, keepdims=False, split_every=None):
        """strata.min."""
        return _wrap(_ops.reduce("min", self._h, axis, keepdims, split_every=split_every))

    def max(self, axis=None, *, keepdims=False, split_every=None):
        """strata.max."""
        return _wrap(_ops.reduce("max", self._h, axis, keepdims, split_every=split_every))

    def var(self, axis=None, *, correction=None, ddof=None, dtype=None, keepdims=False,
            split_every=None):
        """strata.var: the standard's correction= or numpy's ddof= (the same
        number); numpy's dtype= casts x to it first."""
        h = _ops.in_dtype(self._h, dtype, "var")
        return _wrap(_ops.moment("var", h, axis, _ops.correction_of("var", correction, ddof),
                                 keepdims, split_every))

    def std(self, axis=None, *, correction=None, ddof=None, dtype=None, keepdims=False,
            split_every=None):
        """strata.std: the standard's correction= or numpy's ddof= (the same
        number); numpy's dtype= casts x to it first."""
        h = _ops.in_dtype(self._h, dtype, "std")
        return _wrap(_ops.moment("std", h, axis, _ops.correction_of("std", correction, ddof),
                                 keepdims, split_every))

    def all(self, axis=None, *, keepdims=False):
        """strata.all."""
        return _wrap(_ops.reduce("all", self._h, axis, keepdims))

    def any(self, axis=None, *, keepdims=False):
        """strata.any."""
        return _wrap(_ops.reduce("any", self._h, axis, keepdims))

    def argmin(self, axis=None, *, keepdims=False):
        """strata.argmin."""
        return _wrap(_ops.arg("argmin", self._h, axis, keepdims))

    def argmax(self, axis=None, *, keepdims=False):
        """strata.argmax."""
        return _wrap(_ops.arg("argmax", self._h, axis, keepdims))

    def cumsum(self, axis=None, dtype=None):
        """strata.cumsum (numpy's: x flattened when axis is None)."""
        return _wrap(_ops.numpy_cumulative("cumsum", self._h, axis, dtype))

    def cumprod(self, axis=None, dtype=None):
        """strata.cumprod (numpy's: x flattened when axis is None)."""
        return _wrap(_ops.numpy_cumulative("cumprod", self._h, axis, dtype))

    # ------------------------------------------------------------ elementwise
    def clip(self, min=None, max=None):
        """strata.clip."""
        lo = None if min is None else _as_operand(min, "clip")
        hi = None if max is None else _as_operand(max, "clip")
        return _wrap(_ops.clip(self._h, lo, hi))

    def round(self, decimals=0):
        """numpy's round(x, decimals); decimals=0 is strata.round(x)."""
        return _wrap(_ops.round_to(self._h, decimals))

    # ---------------------------------------------------- running and writing
    def visualize(self, filename="strata", format=None, optimize_graph=True):
        """strata.visualize(x, ...)."""
        return _execute.visualize([self._h], filename=filename, format=format)

    def plan(self, optimize_graph=True):
        """strata.plan(x, ...)."""
        return _execute.plan([self._h], optimize_graph)

    def to_zarr(self, store, path=None, **kwargs):
        """strata.to_zarr(x, store, path, ...)."""
        h = _zarr_io.to_zarr(self._h, store, path, **kwargs)
        return None if h is None else _wrap(h)

    def map_blocks(self, func, *args, **kwargs):
        """strata.map_blocks(func, x, *args, ...)."""
        return _wrap(_blocks.map_blocks(func, _handles([self, *args], "map_blocks"), **kwargs))

    def map_overlap(self, func, depth, boundary=None, trim=True, **kwargs):
        """Dask's Array.map_overlap: strata.map_overlap(func, x, ...)."""
        return _wrap(_blocks.map_overlap(func, [self._h], depth=depth, boundary=boundary,
                                         trim=trim, **kwargs))

    # ------------------------------------------------------- numpy's protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NEP 13: numpy ufuncs on Arrays build lazy Arrays (_numpy_protocol.py)."""
        for x in inputs + tuple(kwargs.get("out", None) or ()):
            if not isinstance(x, (Array, np.ndarray, np.generic, bool, int, float, complex)):
                return NotImplemented
        handler = NUMPY_UFUNC_METHODS.get(method)
        if handler is None:
            raise NotImplementedError(f"numpy.{ufunc.__name__}.{method} is not implemented "
                                      "for strata.Array")
        return handler(ufunc, inputs, dict(kwargs))

    def __array_function__(self, func, types, args, kwargs):
        """NEP 18: numpy functions on Arrays build lazy Arrays (_numpy_protocol.py)."""
        for t in types:
            if not issubclass(t, (Array, np.ndarray)):
                return NotImplemented
        handler = NUMPY_FUNCTIONS.get(func)
        if handler is None:
            raise NotImplementedError(
                f"{_numpy_name(func)} is not implemented for strata.Array (strata does not "
                "compute silently; use a strata function, or compute first)")
        return handler(*args, **kwargs)

    def item(self, *args):
        """numpy's x.item(): computes x."""
        return np.asarray(self).item(*args)

    def tolist(self):
        """numpy's x.tolist(): computes x."""
        return np.asarray(self).tolist()


# numpy function -> its handler, and ufunc method ("__call__", "reduce",
# "accumulate") -> handler(ufunc, inputs, kwargs); filled by _numpy_protocol.
NUMPY_FUNCTIONS = {}
NUMPY_UFUNC_METHODS = {}


def _numpy_name(func):
    module = getattr(func, "__module__", None) or "numpy"
    # numpy's public name: numpy.sum, not numpy._core.fromnumeric.sum.
    if module.startswith(("numpy.core", "numpy._core")) or (
            module.startswith("numpy.lib.") and module != "numpy.lib.stride_tricks"):
        module = "numpy"
    return f"{module}.{getattr(func, '__name__', repr(func))}"


class _VIndexer:
    """x.vindex: `x.vindex[ilat, ilon]` selects points (Dask's vindex)."""

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, key):
        return _wrap(_indexing.vindex(self._x._h, _key_handles(key)))


def _key_handles(key):
    """An index key (or an xarray explicit indexer's) with its Arrays as
    handles (a 0-d integer Array as its int, computed), for _indexing."""
    key = _indexing.explicit_key(key)

    def term(k):
        if not isinstance(k, Array):
            return k
        if k.ndim == 0 and k.dtype.kind in "iu":
            return operator.index(k)
        return k._h
    return tuple(term(k) for k in key) if isinstance(key, tuple) else term(key)


def _handles(arrays, what):
    if not all(isinstance(a, Array) for a in arrays):
        raise TypeError(f"{what}: pass the arrays as positional arguments "
                        "(other arguments as keywords)")
    return [a._h for a in arrays]


def as_array(x, what):
    """x as an Array: an Array as it is, a numpy array or scalar shared
    (zero-copy where possible); TypeError naming `what` for anything else."""
    if isinstance(x, Array):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return _wrap(_indexing.handle_of_numpy(x))
    raise TypeError(f"{what}: expected a strata.Array, got {type(x).__name__}")
