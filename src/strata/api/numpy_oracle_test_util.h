// Test helpers: numpy (the .venv's interpreter, numpy 2) as the
// oracle of API tests, and host-side random inputs with NaN, inf and -0.0.
//
//   NumpyOracle np;
//   int id = np.Add("np.nanmean(a, axis=0)", {&input});
//   np.Run();                      // one Python process for every case
//   ExpectArrayNear(got, np.Result(id)[0], ...);
//
// Inputs and results travel as .npy files in a temporary directory, read and
// written by numpy_oracle_test_util.py beside this file; each case is a Python
// expression over `np` and its inputs, named a, b, c, ... (and the helpers a
// Prelude defines); a case may return a tuple (several results). A case that raises records the
// exception (Error(id): "ValueError: ..."), so tests can check that Strata
// refuses what numpy refuses. Floating-point warnings are silenced (all-NaN
// slices are tested on purpose).
//
// Thread-safety: one oracle per test.
#ifndef STRATA_API_NUMPY_ORACLE_TEST_UTIL_H_
#define STRATA_API_NUMPY_ORACLE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "strata/base/temp_dir.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/strata.h"

namespace strata::testing_util {

// The interpreter with numpy: $STRATA_PYTHON (ctest sets it to the .venv's,
// Python_EXECUTABLE), else python3 on PATH.
inline std::string PythonInterpreter() {
  const char* python = std::getenv("STRATA_PYTHON");
  return python != nullptr && *python != '\0' ? python : "python3";
}

// Writes `a` as a .npy file (format 1.0, little-endian, C order).
inline void WriteNpy(const std::string& path, const NDArray& a) {
  std::string shape = "(";
  for (Index d : a.shape()) shape += std::to_string(d) + ", ";
  if (a.rank() > 1) shape.resize(shape.size() - 2);
  if (a.rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + a.dtype().ZarrV2Name(Endian::kLittle) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(a.data()), a.nbytes());
}

// Reads a .npy file written by numpy (little-endian, C order, version 1-3).
inline NDArray ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  STRATA_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0) << path;
  size_t header_len, offset;
  if (bytes[6] == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else {
    uint32_t l;
    std::memcpy(&l, bytes.data() + 8, 4);
    header_len = l;
    offset = 12;
  }
  const std::string header = bytes.substr(offset, header_len);
  auto field = [&](const std::string& key) {
    size_t p = header.find("'" + key + "':");
    STRATA_CHECK(p != std::string::npos) << header;
    return header.substr(p + key.size() + 3);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  STRATA_CHECK(field("fortran_order").find("False") == 1 ||
               field("fortran_order").find("False") == 0)
      << header;
  std::string shape_text = field("shape");
  shape_text = shape_text.substr(shape_text.find('(') + 1);
  shape_text = shape_text.substr(0, shape_text.find(')'));
  Shape shape;
  std::stringstream ss(shape_text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    shape.push_back(std::stoll(item));
  }
  Result<DTypeWithEndian> dt = ParseZarrV2DType(descr);
  STRATA_CHECK(dt.ok() && dt->endian == Endian::kLittle) << descr;
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), dt->dtype, shape);
  const size_t data_at = offset + header_len;
  STRATA_CHECK(bytes.size() - data_at == static_cast<size_t>(a.nbytes())) << path;
  std::memcpy(a.data(), bytes.data() + data_at, a.nbytes());
  return a;
}

class NumpyOracle {
 public:
  NumpyOracle() : dir_("strata-numpy") {}

  // A case: `expr` over np and the inputs (named a, b, c, ... in order).
  int Add(std::string expr, std::vector<const NDArray*> inputs) {
    const int id = static_cast<int>(exprs_.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      WriteNpy(Path("in", id, static_cast<int>(k)), *inputs[k]);
    }
    exprs_.push_back(std::move(expr));
    num_inputs_.push_back(static_cast<int>(inputs.size()));
    return id;
  }

  // Python code run once before the cases (helper functions they call).
  void Prelude(std::string code) { prelude_ += code + "\n"; }

  // Evaluates every case in one Python process; fails the test if Python
  // itself cannot run.
  void Run() {
    std::ofstream prelude(dir_.path() + "/prelude.py");
    prelude << prelude_;
    prelude.close();
    std::ofstream cases(dir_.path() + "/cases.txt");
    for (size_t i = 0; i < exprs_.size(); ++i) {
      cases << i << '\t' << num_inputs_[i] << '\t' << exprs_[i] << '\n';
    }
    cases.close();
    const std::string cmd = PythonInterpreter() + " " + ScriptPath() + " " + dir_.path() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    const int rc = pclose(p);
    ASSERT_EQ(rc, 0) << out;
    ASSERT_EQ(out, "ok\n") << out;
    ran_ = true;
  }

  // The results of case `id` (empty when it raised).
  std::vector<NDArray> Result(int id) const {
    STRATA_CHECK(ran_);
    std::vector<NDArray> r;
    std::ifstream count(dir_.path() + "/count_" + std::to_string(id) + ".txt");
    int n = 0;
    if (!(count >> n)) return r;
    for (int j = 0; j < n; ++j) r.push_back(ReadNpy(Path("out", id, j)));
    return r;
  }
  NDArray First(int id) const {
    std::vector<NDArray> r = Result(id);
    EXPECT_FALSE(r.empty()) << exprs_[id] << " raised " << Error(id);
    return r.empty() ? NDArray() : std::move(r[0]);
  }
  // "ValueError: ..." when case `id` raised, else "".
  std::string Error(int id) const {
    std::ifstream in(dir_.path() + "/err_" + std::to_string(id) + ".txt");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return s;
  }
  const std::string& expr(int id) const { return exprs_[id]; }

 private:
  // numpy_oracle_test_util.py beside this header: from STRATA_SOURCE_DIR (ctest sets
  // it), else from where this file was compiled.
  static std::string ScriptPath() {
    if (const char* root = std::getenv("STRATA_SOURCE_DIR")) {
      return std::string(root) + "/src/strata/api/numpy_oracle_test_util.py";
    }
    return (std::filesystem::path(__FILE__).parent_path() / "numpy_oracle_test_util.py").string();
  }

  std::string Path(const char* kind, int id, int k) const {
    return dir_.path() + "/" + kind + "_" + std::to_string(id) + "_" + std::to_string(k) + ".npy";
  }
  TempDir dir_;
  std::vector<std::string> exprs_;
  std::vector<int> num_inputs_;
  std::string prelude_;
  bool ran_ = false;
};

// ----------------------------------------------------------- comparisons

// Element `i` (C order) of a contiguous array as complex<double>.
inline std::complex<double> ElementAt(const NDArray& a, Index i) {
  return VisitDType(a.dtype(), [&](auto tag) -> std::complex<double> {
    using T = typename decltype(tag)::type;
    const T v = a.data_as<T>()[i];
    if constexpr (kIsComplex<T>) {
      return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
    } else {
      return {static_cast<double>(v), 0.0};
    }
  });
}

inline bool Near(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

// Same shape, the same dtype (unless `check_dtype` is false) and values equal
// within rtol/atol (NaN equal to NaN, infinities exact; integers exactly when
// both are integers). Reports the first few differences.
inline void ExpectArrayNear(const NDArray& got, const NDArray& want, double rtol, double atol,
                            const std::string& what, bool check_dtype = true) {
  ASSERT_EQ(ShapeToString(got.shape()), ShapeToString(want.shape())) << what;
  if (check_dtype) {
    EXPECT_EQ(got.dtype().name(), want.dtype().name()) << what;
  }
  const bool exact = (got.dtype().is_integer() || got.dtype().is_bool()) &&
                     (want.dtype().is_integer() || want.dtype().is_bool());
  int reported = 0;
  for (Index i = 0; i < got.num_elements() && reported < 5; ++i) {
    bool ok;
    std::complex<double> g, w;
    if (exact) {
      int64_t gi = 0, wi = 0;
      VisitDType(got.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!kIsComplex<T>) gi = static_cast<int64_t>(got.data_as<T>()[i]);
      });
      VisitDType(want.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!kIsComplex<T>) wi = static_cast<int64_t>(want.data_as<T>()[i]);
      });
      ok = gi == wi;
      g = static_cast<double>(gi);
      w = static_cast<double>(wi);
    } else {
      g = ElementAt(got, i);
      w = ElementAt(want, i);
      ok = Near(g.real(), w.real(), rtol, atol) && Near(g.imag(), w.imag(), rtol, atol);
    }
    if (!ok) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", numpy says " << w;
      ++reported;
    }
  }
}

// ------------------------------------------------------------------ inputs

// A host array of `dtype`: integers in [-5, 6) (unsigned: [0, 11)), bool
// with p = 0.4, floats in [-3, 3) with about `special` of the elements NaN,
// +-inf or -0.0 (only NaN with `nan_only`; complex: in either component).
inline NDArray RandomHost(DType dtype, const Shape& shape, uint32_t seed, double special = 0.0,
                          bool nan_only = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3), p(0, 1);
  std::uniform_int_distribution<int> small(-5, 5), kind(0, 3);
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), dtype, shape);
  auto real = [&]() {
    if (p(rng) < special) {
      switch (nan_only ? 0 : kind(rng)) {
        case 0:
          return std::numeric_limits<double>::quiet_NaN();
        case 1:
          return std::numeric_limits<double>::infinity();
        case 2:
          return -std::numeric_limits<double>::infinity();
        default:
          return -0.0;
      }
    }
    return u(rng);
  };
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = a.data_as<T>();
    for (Index i = 0; i < a.num_elements(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        d[i] = p(rng) < 0.4;
      } else if constexpr (kIsComplex<T>) {
        using R = typename T::value_type;
        d[i] = T(static_cast<R>(real()), static_cast<R>(real()));
      } else if constexpr (std::is_floating_point_v<T>) {
        d[i] = static_cast<T>(real());
      } else if constexpr (std::is_unsigned_v<T>) {
        d[i] = static_cast<T>(small(rng) + 5);
      } else {
        d[i] = static_cast<T>(small(rng));
      }
    }
  });
  return a;
}

// Every dtype Strata has.
inline std::vector<DType> AllDTypes() {
  std::vector<DType> out;
  for (int i = 0; i < kNumDTypes; ++i) out.push_back(static_cast<DTypeId>(i));
  return out;
}

// "np.float32" style name of a dtype, for expressions.
inline std::string NpType(DType d) {
  return d.is_bool() ? "np.bool_" : "np." + std::string(d.name());
}

}  // namespace strata::testing_util

#endif  // STRATA_API_NUMPY_ORACLE_TEST_UTIL_H_
