"""Where a Zarr group lives, for strata.xarray: a local directory or an
s3:// prefix, read and written key by key through the engine's own Store
(`_strata.open_store`: LocalStore, S3Store), so that a group's metadata goes
where its arrays go, with the same S3 settings (AWS_* variables, the URL's
`?endpoint=...`) and the same one-line errors.

A Group gives the group's keys (bytes and JSON documents), the URLs of its
arrays for strata.from_zarr / strata.to_zarr, and a zarr-python 3 store of
an array's keys (which reads and writes the string variables strata has no
dtype for). `group_at(store)` picks the kind:
- LocalGroup: a directory (also `file://`). A new group (to_zarr modes "w"
  and "w-") is assembled in a hidden directory beside the target and renamed
  into place: the old group, with "w", stays whole until the rename.
- ObjectGroup: an `s3://bucket/prefix` URL. S3 cannot rename, so a new group
  is written in place with the group's own metadata (.zgroup, .zattrs,
  .zmetadata or zarr.json) last, and with "w" the old group's own metadata
  is removed first: readers find no group until the new one is complete. A
  failed write erases every key under the prefix (with "w", the old group
  is then gone too). Listing a group's members lists every key under it
  (S3 has no directories); consolidated metadata avoids it.

Thread-safety: a Group is used by one thread at a time (its store is
thread-safe).
"""
import json
import os
import shutil
import uuid
from collections.abc import MutableMapping

from ._core import _strata

# A group's own metadata documents, in either Zarr format.
GROUP_KEYS = (".zgroup", ".zattrs", ".zmetadata", "zarr.json")


def group_at(store, what):
    """The Group of a path, `file://` path or `s3://` URL (a str or
    PathLike); TypeError for other objects, ValueError for other schemes."""
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str):
        raise TypeError(f"{what}: expected a path or an s3:// URL of a Zarr group, got "
                        f"{type(store).__name__}")
    if store.startswith("s3://"):
        return ObjectGroup(store, what)
    if store.startswith("file://"):
        store = store[len("file://"):]
    if "://" in store:
        raise ValueError(f"{what}: {store!r}: unsupported URL scheme (expected a local path, "
                         "file:// or s3://)")
    return LocalGroup(store, what)


class Group:
    """A Zarr group's keys (relative to the group: ".zattrs", "t/.zarray").
    Subclasses say where it is (url, array_url, child) and how a new group
    is written (new_group)."""

    def __init__(self, url, what):
        self.url = url          # for messages and strata.from_zarr/to_zarr
        self._what = what       # the calling function, for messages
        self._opened = None

    def _store(self, create=False):
        if self._opened is None:
            try:
                self._opened = _strata.open_store(self.url, create)
            except (OSError, ValueError) as e:
                raise type(e)(f"{self._what}: {e}") from None
        return self._opened

    # ---------------------------------------------------------------- keys

    def get(self, key):
        """The bytes of key, or None when absent."""
        return self._store().get(key)

    def get_json(self, key):
        """The JSON document at key, or None when absent; ValueError naming
        it when it is not JSON."""
        raw = self.get(key)
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ValueError(f"{self._what}: cannot read {self.key_url(key)}: {e}") from None

    def has(self, key):
        return self.get(key) is not None

    def put(self, key, content):
        """Stores bytes or a JSON document under key (atomically)."""
        if not isinstance(content, bytes):
            content = json.dumps(content).encode()
        self._store(create=True).set(key, content)

    def erase(self, key):
        self._store().erase(key)

    def erase_member(self, name):
        """Removes every key of member `name` (an array or group)."""
        self._store().erase_prefix(name + "/")

    def erase_all(self):
        self._store().erase_prefix("")

    def keys(self, prefix=""):
        return self._store().list(prefix)

    def is_zarr_group(self):
        return self.has(".zgroup") or self.has(".zmetadata") or \
            (self.get_json("zarr.json") or {}).get("node_type") == "group"

    def zarr_store(self, name):
        """Member `name` as a zarr-python 3 store (zarr_store below)."""
        return zarr_store(self, name)

    def key_url(self, key):
        return self.array_url(key)

    # ---------------------------------------------------------------- kinds

    def exists(self):
        """True when anything is at the group's place."""
        raise NotImplementedError

    def holds(self, name):
        """True when anything is at member `name`'s place."""
        raise NotImplementedError

    def members(self, metadata_key):
        """The names of the direct members with a `metadata_key` document
        (".zarray", "zarr.json"), sorted."""
        raise NotImplementedError

    def array_url(self, name):
        raise NotImplementedError

    def child(self, path):
        """The Group at `path` below this one."""
        raise NotImplementedError

    def new_group(self, mode):
        """A NewGroup writing a new group here (mode "w" or "w-"), after
        the checks: FileExistsError ("w-" and something is here), ValueError
        (something that is not a Zarr group is here), FileNotFoundError
        (nowhere to put it)."""
        raise NotImplementedError


class LocalGroup(Group):
    def __init__(self, path, what):
        super().__init__(os.path.abspath(path), what)

    def exists(self):
        return os.path.lexists(self.url)

    def is_zarr_group(self):
        return os.path.isdir(self.url) and super().is_zarr_group()

    def holds(self, name):
        return os.path.lexists(os.path.join(self.url, name))

    def _store(self, create=False):
        if not create and not os.path.isdir(self.url):
            raise FileNotFoundError(f"{self._what}: no Zarr group at {self.url!r} (not a "
                                    "directory)")
        return super()._store(create)

    def members(self, metadata_key):
        if not os.path.isdir(self.url):
            return []
        return [n for n in sorted(os.listdir(self.url))
                if os.path.isfile(os.path.join(self.url, n, metadata_key))]

    def array_url(self, name):
        return os.path.join(self.url, name)

    def child(self, path):
        return LocalGroup(os.path.join(self.url, path), self._what)

    def new_group(self, mode):
        return _StagedNewGroup(self, mode)


class ObjectGroup(Group):
    def __init__(self, url, what):
        base, sep, query = url.partition("?")
        super().__init__(base.rstrip("/") + sep + query, what)
        self._base, self._query = base.rstrip("/"), sep + query

    def exists(self):
        # The group's own metadata first: listing lists every key under it.
        return self.is_zarr_group() or bool(self.keys(""))

    def holds(self, name):
        return self.has(name) or bool(self.keys(name + "/"))

    def members(self, metadata_key):
        return sorted({k.split("/")[0] for k in self.keys("")
                       if k.count("/") == 1 and k.endswith("/" + metadata_key)})

    def array_url(self, name):
        return f"{self._base}/{name}{self._query}"

    def child(self, path):
        return ObjectGroup(self.array_url(path), self._what)

    def new_group(self, mode):
        return _InPlaceNewGroup(self, mode)


# ============================================================== new groups

class _NewGroup:
    """A new group being written: `node` is the Group its arrays go to;
    `overwrite` whether arrays there replace existing ones. Nothing may be
    written to `node` until every check has passed and begin() is called;
    after the compute, commit(write_metadata, names) (write_metadata(node)
    writes the group's own documents; names are the new members); on any
    failure, before or after begin(), abort()."""
    overwrite = False

    def begin(self):
        pass

    @staticmethod
    def _check_replaceable(group, mode, found):
        """Refuses to write over `found` (what is at the group's place, a
        description, or None for nothing): anything with "w-", anything
        but a Zarr group with "w"."""
        if found is None:
            return
        if mode == "w-":
            raise FileExistsError(f"{group._what}: {group.url!r} exists (mode='w-'); pass "
                                  "mode='w' to replace it")
        if not group.is_zarr_group():
            raise ValueError(f"{group._what}: {group.url!r} {found} and is not a Zarr group; "
                             "refusing to replace it")


class _StagedNewGroup(_NewGroup):
    def __init__(self, group, mode):
        target, what = group.url, group._what
        self._check_replaceable(group, mode, "exists" if group.exists() else None)
        parent = os.path.dirname(target)
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{what}: the directory {parent!r} does not exist")
        self._mode, self._target = mode, target
        self._tmp = os.path.join(parent, f".{os.path.basename(target)}.strata-"
                                         f"{uuid.uuid4().hex[:12]}")
        os.mkdir(self._tmp)
        self.node = LocalGroup(self._tmp, what)

    def commit(self, write_metadata, names):
        write_metadata(self.node)
        target, tmp = self._target, self._tmp
        if os.path.lexists(target):
            if self._mode == "w-":
                raise FileExistsError(f"to_zarr: {target!r} appeared while writing (mode='w-')")
            old = tmp + ".old"
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, target)

    def abort(self):
        shutil.rmtree(self._tmp, ignore_errors=True)


class _InPlaceNewGroup(_NewGroup):
    overwrite = True   # with "w", arrays replace the old group's at their names

    def __init__(self, group, mode):
        keys = group.keys("")
        self._check_replaceable(group, mode, f"holds objects ({keys[0]!r})" if keys else None)
        self._old = keys
        self._begun = False
        self.node = group

    def begin(self):
        self._begun = True
        # Readers find no group while it is rewritten.
        for key in GROUP_KEYS:
            if key in self._old:
                self.node.erase(key)

    def commit(self, write_metadata, names):
        names = set(names)
        for member in sorted({k.split("/")[0] for k in self._old if "/" in k} - names):
            self.node.erase_member(member)
        for key in self._old:
            if "/" not in key and key not in GROUP_KEYS and key not in names:
                self.node.erase(key)
        write_metadata(self.node)

    def abort(self):
        if self._begun:   # before, nothing was written
            self.node.erase_all()


# ============================================================== zarr-python

def zarr_store(group, name):
    """Member `name` of `group` as a zarr-python 3 store: a MemoryStore over
    a MutableMapping of its keys (_ZarrMapping), so that zarr-python reads
    and writes the string arrays strata has no dtype for wherever the group
    is (a directory or S3), through strata's own store."""
    from zarr.storage import MemoryStore
    return MemoryStore(_ZarrMapping(group, name))


class _ZarrMapping(MutableMapping):
    """Member `name` of a Group as zarr-python's MemoryStore dictionary: its
    keys (relative to the member) to zarr Buffers, read and written through
    the Group."""

    def __init__(self, group, name):
        self._group = group
        self._prefix = name.strip("/") + "/"

    def __getitem__(self, key):
        from zarr.core.buffer import default_buffer_prototype
        value = self._group.get(self._prefix + key)
        if value is None:
            raise KeyError(key)
        return default_buffer_prototype().buffer.from_bytes(bytes(value))

    def __setitem__(self, key, value):
        self._group.put(self._prefix + key, value.to_bytes())

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        self._group.erase(self._prefix + key)

    def __contains__(self, key):
        return self._group.has(self._prefix + key)

    def __iter__(self):
        n = len(self._prefix)
        return iter([k[n:] for k in self._group.keys(self._prefix)])

    def __len__(self):
        return len(self._group.keys(self._prefix))

    def __eq__(self, other):
        return isinstance(other, _ZarrMapping) and other._group is self._group and \
            other._prefix == self._prefix

    __hash__ = None
