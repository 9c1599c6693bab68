// `_strata.Store`: the key-value Store (storage/store.h) of a path or URL,
// for the Python code that reads and writes a Zarr group's own metadata
// (strata.xarray) and for zarr-python, which writes the string variables
// strata has no dtype for (a MutableMapping over it, python/strata/_group.py).
// The same stores the engine reads and writes arrays through: a local path
// is a LocalStore (atomic writes by rename), an s3:// URL an S3Store (the
// endpoint, region and credentials from the environment and the URL).
//
// Thread-safety: a Store is thread-safe; every method releases the GIL while
// it talks to the store.
#include "strata/storage/store.h"

#include "strata/python/binding.h"
#include "strata/storage/open_store.h"

namespace strata::python {
namespace {

// A store and the key prefix of the path or URL it was opened for.
struct StoreAt {
  std::shared_ptr<Store> store;
  std::string prefix;
  std::string Key(const std::string& key) const { return JoinKey(prefix, key); }
  // A prefix of keys ("" or ending in '/') as the store lists it.
  std::string Under(const std::string& p) const { return prefix.empty() ? p : prefix + "/" + p; }
};

py::object Get(const StoreAt& s, const std::string& key) {
  Result<Buffer> value = [&] {
    py::gil_scoped_release release;
    return s.store->Get(s.Key(key), *MemoryPool::Default());
  }();
  if (!value.ok() && value.status().code() == StatusCode::kNotFound) return py::none();
  Buffer b = Unwrap(std::move(value));
  return py::bytes(reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size()));
}

void Set(const StoreAt& s, const std::string& key, py::bytes value) {
  std::string_view bytes = value;  // kept alive by `value`, which the caller holds
  py::gil_scoped_release release;
  Check(s.store->Set(s.Key(key), bytes));
}

}  // namespace

void RegisterStore(py::module_& m) {
  py::class_<StoreAt>(m, "Store",
                      "The key-value store of a path or s3:// URL (keys relative to it).")
      .def_property_readonly("url", [](const StoreAt& s) { return s.store->url(); })
      .def("get", &Get, py::arg("key"), "The value of key as bytes, or None when absent.")
      .def("set", &Set, py::arg("key"), py::arg("value"), "Stores value under key atomically.")
      .def(
          "erase",
          [](const StoreAt& s, const std::string& key) {
            py::gil_scoped_release release;
            Check(s.store->Erase(s.Key(key)));
          },
          py::arg("key"))
      .def(
          "erase_prefix",
          [](const StoreAt& s, const std::string& prefix) {
            py::gil_scoped_release release;
            Check(s.store->ErasePrefix(s.Under(prefix)));
          },
          py::arg("prefix"), "Removes every key under prefix ('' for all; else ending in '/').")
      .def(
          "list",
          [](const StoreAt& s, const std::string& prefix) {
            std::vector<std::string> keys;
            {
              py::gil_scoped_release release;
              keys = Unwrap(s.store->List(s.Under(prefix)));
            }
            // Keys relative to the store's path, as get/set take them.
            const size_t skip = s.prefix.empty() ? 0 : s.prefix.size() + 1;
            for (std::string& k : keys) k.erase(0, skip);
            return keys;
          },
          py::arg("prefix"), "Every key under prefix ('' for all; else ending in '/'), sorted.");
  m.def(
      "open_store",
      [](const std::string& url, bool create) {
        py::gil_scoped_release release;  // an S3 store checks its bucket
        StoreAndPrefix s = Unwrap(OpenStoreUrl(url, create));
        return StoreAt{std::move(s.store), std::move(s.prefix)};
      },
      py::arg("url"), py::arg("create"),
      "The store of a path or URL; FileNotFoundError for a missing directory (unless create) "
      "or bucket, OSError for an unreachable server.");
}

}  // namespace strata::python
