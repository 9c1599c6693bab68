"""strata.Array as one of xarray's explicitly indexed arrays, so that
xarray's own indexing reaches strata's lazy pointwise selection.

xarray indexes a variable's data through `indexing.as_indexable(data)`: an
array that is an `ExplicitlyIndexed` is indexed by itself with xarray's
indexer objects (`data[BasicIndexer]`, `data.oindex[OuterIndexer]`,
`data.vindex[VectorizedIndexer]`); any other Array API array is wrapped in
`ArrayApiIndexingAdapter`, which refuses vectorized indexing ("Vectorized
indexing is not supported"), so that `ds.sel(lat=lats, lon=lons,
method="nearest")` with DataArray indexers failed on strata arrays. Dask
arrays get their own adapter; no hook exists for other chunked arrays.

strata.Array speaks that protocol (its __getitem__, vindex and setitem take
xarray's indexers: strata/_indexing.py reads their `.tuple`; oindex and
get_duck_array are here), and `declare_explicitly_indexed()` makes it a
subclass of xarray's ExplicitlyIndexed, once, when strata.xarray is
imported: as_indexable checks the class (a plain class, no ABC registry),
and the strata core does not import xarray. xarray itself is not changed.

Vectorized indexing is strata's vindex (Dask's semantics, which are
xarray's: the broadcast dimensions first, sliced ones after): lazy, and only
the chunks the points fall in are read.
"""
from xarray.core.indexing import ExplicitlyIndexed, IndexCallable

from ..array_api.array_object import Array


class StrataExplicitIndexing(ExplicitlyIndexed):
    """The parts of xarray's explicit-indexing protocol strata.Array does
    not have itself (mixed into strata.Array by declare_explicitly_indexed).
    Stateless."""

    __slots__ = ()

    def get_duck_array(self):
        """xarray's to_numpy / formatting unwrap explicitly indexed arrays
        with this; a strata array is its own duck array."""
        return self

    @property
    def oindex(self):
        """Orthogonal indexing with xarray's OuterIndexer (one integer,
        slice or 1-d integer array per axis), axis by axis as xarray's
        ArrayApiIndexingAdapter does it: lazy, reading only what is
        selected."""
        return IndexCallable(self._oindex_get, self._oindex_set)

    def _oindex_get(self, indexer):
        value = self
        # Last axis first, so that an integer dropping an axis leaves the
        # axes before it where they were.
        for axis, subkey in reversed(list(enumerate(indexer.tuple))):
            value = value[(slice(None),) * axis + (subkey, Ellipsis)]
        return value

    def _oindex_set(self, indexer, value):
        # strata's setitem (it refuses array indices, naming them).
        self[indexer.tuple] = value


def declare_explicitly_indexed():
    """Makes strata.Array an xarray ExplicitlyIndexed array (idempotent)."""
    if not issubclass(Array, ExplicitlyIndexed):
        Array.__bases__ = Array.__bases__ + (StrataExplicitIndexing,)
