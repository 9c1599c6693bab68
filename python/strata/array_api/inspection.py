"""__array_namespace_info__: what this namespace supports (the Array API's
inspection functions, 2023.12 with 2024.12's "max dimensions")."""
from .._core import DTYPES

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float32", "float64", "complex64", "complex128"),
}


def _check_device(device, what):
    if device not in (None, "cpu"):
        raise ValueError(f"{what}: strata arrays live on the 'cpu' device, not {device!r}")


class Info:
    """What __array_namespace_info__() returns: strata's capabilities, its
    one device ('cpu') and its dtypes."""

    def capabilities(self):
        # Boolean masks, nonzero and the unique_* functions give
        # data-dependent shapes: they compute what decides the shape first
        # (eagerly, as Dask does with unknown chunks). The linalg extension
        # is strata.linalg.
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        _check_device(device, "default_dtypes")
        return {"real floating": DTYPES["float64"], "complex floating": DTYPES["complex128"],
                "integral": DTYPES["int64"], "indexing": DTYPES["int64"]}

    def dtypes(self, *, device=None, kind=None):
        _check_device(device, "dtypes")
        if kind is None:
            names = tuple(DTYPES)
        elif isinstance(kind, str):
            if kind not in _KINDS:
                raise ValueError(f"unknown dtype kind {kind!r}")
            names = _KINDS[kind]
        else:
            names = tuple(dict.fromkeys(n for k in kind for n in self.dtypes(kind=k)))
        return {n: DTYPES[n] for n in names}


def __array_namespace_info__():
    return Info()
