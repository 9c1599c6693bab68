"""strata.Array: a lazy chunked array, an Array API array.

Building an Array never touches data; compute(), numpy conversion and the
scalar conversions (bool(x), float(x), ...) run the plan.
"""
import operator
import sys

import numpy as np

from . import _core
from ._core import _strata
from ._numpy_dispatch import NumpyMethods


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
        from ._creation import asarray
        return asarray(x)._h
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
            from ._creation import asarray
            if i == 0:
                ha = asarray(h)._h
            else:
                hb = asarray(h)._h
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
            from ._functions import matmul
            r = matmul(self, other)
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


# numpy.vectorize's methods that convert their arguments with asarray.
_VECTORIZE_CALLS = ("_vectorize_call", "_vectorize_call_with_signature", "_get_ufunc_and_otypes")


def _numpy_vectorize_is_calling():
    """True when numpy.vectorize is converting an Array (called from
    __array__): it would compute it whole and loop over its elements in
    Python, the silent compute strata refuses elsewhere."""
    source = np.vectorize._vectorize_call.__code__.co_filename
    try:
        frame = sys._getframe(2)  # 0: here, 1: __array__, 2: whoever converts
    except ValueError:  # called from C with no Python caller
        return False
    for _ in range(3):  # numpy's method, or a comprehension inside it
        if frame is None:
            return False
        code = frame.f_code
        if code.co_filename == source and code.co_name in _VECTORIZE_CALLS:
            return True
        frame = frame.f_back
    return False


class Array(NumpyMethods):
    """A lazy chunked array (strata.Array). See the package docstring.

    numpy's protocols (__array_ufunc__, __array_function__) and the ndarray
    methods numpy-written code calls come from NumpyMethods
    (_numpy_dispatch.py): numpy functions on an Array build lazy Arrays."""

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
        from ._spec import Spec
        return Spec._from_cpp(self._h.spec)

    @property
    def T(self):
        from ._functions import permute_dims
        if self.ndim != 2:
            raise ValueError(f"x.T is for 2-d arrays (this one has {self.ndim} dimensions); "
                             "use strata.permute_dims")
        return permute_dims(self, (1, 0))

    @property
    def mT(self):
        from ._functions import matrix_transpose
        return matrix_transpose(self)

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
        import strata
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(f"strata implements the Array API {', '.join(_API_VERSIONS)}, "
                             f"not {api_version!r}")
        return strata

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
        pow() may be an ulp off)."""
        if type(other) in (int, float) and other == 2 and np.dtype(self.dtype).kind in "fc":
            return _binary("multiply", self, self)
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
        from ._functions import matmul
        if not isinstance(other, (Array, np.ndarray)):
            return NotImplemented
        return matmul(self, other)

    def __rmatmul__(self, other):
        from ._functions import matmul
        if not isinstance(other, (Array, np.ndarray)):
            return NotImplemented
        return matmul(other, self)

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
        from ._indexing import setitem
        self._h = setitem(self, key, value)

    def __getitem__(self, key):
        from ._indexing import getitem
        return getitem(self, key)

    @property
    def vindex(self):
        """Pointwise selection, as Dask's: x.vindex[ilat, ilon]."""
        from ._indexing import VIndexer
        return VIndexer(self)

    # ------------------------------------------------- conversions (they compute)
    def compute(self, **kwargs):
        """Runs the plan; returns a numpy array over the engine's buffer."""
        from ._compute import compute
        return compute(self, **kwargs)[0]

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
        if _numpy_vectorize_is_calling():
            raise NotImplementedError(
                "numpy.vectorize on a strata.Array would compute the whole array and call its "
                "function element by element in this process; use strata.apply_gufunc(func, "
                "signature, x, vectorize=True), which runs it block by block on the workers "
                "(xarray's apply_ufunc(..., vectorize=True) calls numpy.vectorize)")
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

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """numpy's ndarray.astype (xarray calls it with keywords); order,
        casting and subok are numpy's and change nothing here."""
        from ._functions import astype
        return astype(self, dtype, copy=copy)

    def reshape(self, *shape):
        from ._functions import reshape
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def visualize(self, filename="strata", format=None):
        from ._compute import visualize
        return visualize(self, filename=filename, format=format)

    def plan(self):
        from ._compute import plan
        return plan(self)

    def to_zarr(self, store, path=None, **kwargs):
        from ._io import to_zarr
        return to_zarr(self, store, path, **kwargs)

    def map_blocks(self, func, *args, **kwargs):
        from ._block_functions import map_blocks
        return map_blocks(func, self, *args, **kwargs)

    def map_overlap(self, func, depth, boundary=None, trim=True, **kwargs):
        """Dask's Array.map_overlap: strata.map_overlap(func, self, ...)."""
        from ._block_functions import map_overlap
        return map_overlap(func, self, depth=depth, boundary=boundary, trim=trim, **kwargs)

    def sum(self, axis=None, dtype=None, keepdims=False):
        from ._functions import sum
        return sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        from ._functions import mean
        return mean(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        from ._functions import min
        return min(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        from ._functions import max
        return max(self, axis=axis, keepdims=keepdims)
