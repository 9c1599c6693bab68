"""One home for Zarr datasets: strata.xarray.open_zarr reads groups,
consolidated metadata, dimension names and fill values through the C++
reader the CLI uses (storage/zarr/hierarchy.h, bound as
_strata.read_hierarchy), not a parser of its own.

The Python parser this replaced had drifted from the C++ one; each
regression test below is one behaviour in which they differed. The datasets
are written by zarr-python 3 (and xarray over it) and their metadata edited
into the spellings the Zarr v3 spec allows and zarr-python reads."""
import json
import os

import numpy as np
import pytest
import xarray as xr
import zarr

import strata
import strata.xarray as sx
from strata import _strata


def _dataset():
    rng = np.random.default_rng(7)
    t = rng.standard_normal((6, 5)).astype("float32")
    t[1, 2] = np.nan
    return xr.Dataset(
        {"t": (("time", "x"), t),
         "p": (("time", "x"), rng.standard_normal((6, 5)))},
        coords={"time": np.arange(6), "x": np.linspace(0.0, 1.0, 5),
                "name": ("x", np.array(["a", "bb", "ccc", "d", "e"], dtype=object))},
        attrs={"title": "hierarchy"})


def _edit_fill_values(path, fills):
    """Sets the Zarr fill_value of arrays (name -> JSON value) in their
    zarr.json and, when present, in the root's consolidated metadata."""
    for name, fill in fills.items():
        meta_path = os.path.join(path, name, "zarr.json")
        with open(meta_path) as f:
            meta = json.load(f)
        meta["fill_value"] = fill
        with open(meta_path, "w") as f:
            json.dump(meta, f)
    root_path = os.path.join(path, "zarr.json")
    with open(root_path) as f:
        root = json.load(f)
    cm = root.get("consolidated_metadata")
    if isinstance(cm, dict):
        for name, fill in fills.items():
            cm["metadata"][name]["fill_value"] = fill
        with open(root_path, "w") as f:
            json.dump(root, f)


# Hex spellings of NaN (the v3 spec's, which zarr-python 3 reads).
HEX_NAN = {"t": "0x7fc00000", "p": "0x7ff8000000000000"}


@pytest.mark.parametrize("consolidated", [True, False])
def test_open_zarr_reads_v3_hex_nan_fill_values(tmp_path, consolidated):
    """The drift that started this: open_zarr refused a v3 float whose fill
    value is a hex NaN, which strata.from_zarr read."""
    path = str(tmp_path / "ds.zarr")
    _dataset().to_zarr(path, zarr_format=3, consolidated=consolidated)
    _edit_fill_values(path, HEX_NAN)
    # zarr-python reads the edited metadata: the spelling is valid.
    z = zarr.open_group(path, mode="r")
    assert np.isnan(z["t"].fill_value) and z["t"].dtype == np.float32
    assert np.isnan(z["p"].fill_value) and z["p"].dtype == np.float64

    for c in ([None, True] if consolidated else [None, False]):
        ds = sx.open_zarr(path, consolidated=c)
        assert isinstance(ds["t"].data, strata.Array)
        expected = xr.open_zarr(path, consolidated=consolidated).load()
        xr.testing.assert_equal(ds.compute(), expected)
        assert ds["t"].dtype == np.float32 and ds["p"].dtype == np.float64
        assert list(ds["name"].values) == ["a", "bb", "ccc", "d", "e"]
        assert ds.attrs["title"] == "hierarchy"
    # strata.from_zarr reads the same arrays with the same fill value.
    np.testing.assert_array_equal(strata.from_zarr(os.path.join(path, "t")).compute(),
                                  expected["t"].values)


def test_fill_value_reaches_python_as_stored_bytes(tmp_path):
    """A fill value is the element's bytes as C++ decoded them: a hex NaN
    payload is kept bit for bit."""
    path = str(tmp_path / "ds.zarr")
    _dataset().to_zarr(path, zarr_format=3, consolidated=False)
    _edit_fill_values(path, {"t": "0x7fc00001", "p": "-Infinity"})
    nodes, from_consolidated = _strata.read_hierarchy(path)
    assert not from_consolidated
    by_name = {n["path"]: n for n in nodes}
    assert by_name["t"]["fill_value"] == np.uint32(0x7fc00001).tobytes()
    assert np.frombuffer(by_name["p"]["fill_value"], "<f8")[0] == -np.inf
    assert by_name["t"]["dimensions"] == ("time", "x")
    assert by_name["name"]["variable_length"] and by_name["name"]["shape"] == (5,)
    assert json.loads(nodes[0]["attributes"]) == {"title": "hierarchy"}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_and_listed_metadata_read_alike(tmp_path, zarr_format):
    path = str(tmp_path / "ds.zarr")
    _dataset().to_zarr(path, zarr_format=zarr_format, consolidated=True)
    listed, a = _strata.read_hierarchy(path, False)
    consolidated, b = _strata.read_hierarchy(path, True)
    assert (a, b) == (False, True)
    keys = ("path", "is_array", "zarr_format", "dimensions", "dtype", "shape", "chunks",
            "fill_value", "variable_length")
    assert [{k: n.get(k) for k in keys} for n in listed] == \
        [{k: n.get(k) for k in keys} for n in consolidated]
    ds = sx.open_zarr(path)
    xr.testing.assert_equal(ds.compute(), xr.open_zarr(path).load())


def test_consolidated_true_without_consolidated_metadata(tmp_path):
    path = str(tmp_path / "ds.zarr")
    _dataset().to_zarr(path, zarr_format=3, consolidated=False)
    with pytest.raises(ValueError, match="has no consolidated metadata"):
        sx.open_zarr(path, consolidated=True)


def test_complex_fill_value_with_hex_parts(tmp_path):
    """Drift: the Python parser turned each part of a complex fill value
    with float(), which refuses the hex spelling."""
    path = str(tmp_path / "ds.zarr")
    ds = xr.Dataset({"c": (("x",), np.array([1 + 2j, 3 - 1j], dtype="complex128"))},
                    coords={"x": [0, 1]})
    ds.to_zarr(path, zarr_format=3, consolidated=False)
    _edit_fill_values(path, {"c": ["0x7ff8000000000000", "0x3ff0000000000000"]})
    got = sx.open_zarr(path)
    xr.testing.assert_equal(got.compute(), xr.open_zarr(path, consolidated=False).load())


def test_bad_member_metadata_is_one_clear_error(tmp_path):
    """Drift: the Python parser failed on a member's bad metadata with
    whatever Python raised (a KeyError for a missing 'shape'); the C++
    reader names the member and what is wrong."""
    path = str(tmp_path / "ds.zarr")
    _dataset().to_zarr(path, zarr_format=3, consolidated=False)
    meta_path = os.path.join(path, "p", "zarr.json")
    with open(meta_path) as f:
        meta = json.load(f)
    del meta["shape"]
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    with pytest.raises(ValueError, match=r"shape") as e:
        sx.open_zarr(path)
    assert "p" in str(e.value)


def test_a_zarr_array_is_not_a_group(tmp_path):
    path = str(tmp_path / "a.zarr")
    zarr.create_array(path, shape=(3,), dtype="float64", zarr_format=3)
    with pytest.raises(ValueError, match="is a Zarr 'array', not a group"):
        sx.open_zarr(path)


def test_missing_and_not_a_group(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Zarr group at"):
        sx.open_zarr(str(tmp_path / "missing.zarr"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is not a Zarr group"):
        sx.open_zarr(str(tmp_path / "empty"))
