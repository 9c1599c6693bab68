// zarr-python reads the metadata Strata writes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "strata/storage/zarr/metadata.h"
#include "strata/storage/zarr/metadata_test_util.h"

namespace strata::testing_zarr {
namespace {

// ---------------------------------------------------------------------------
// Interoperability: zarr-python reads what Strata writes.

// Runs `command`; returns its exit status and standard output.
std::pair<int, std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  return {pclose(pipe), out};
}

// The interpreter with zarr-python 3: $STRATA_PYTHON (ctest sets it to the
// .venv's, Python_EXECUTABLE), else python3 on PATH. (The same rule as
// api/numpy_oracle.h's PythonInterpreter(), which storage cannot include.)
std::string PythonInterpreter() {
  const char* python = std::getenv("STRATA_PYTHON");
  return python != nullptr && *python != '\0' ? python : "python3";
}

// zarr-python 3 opens the v2 arrays Strata encodes and reads the dtype, fill
// value, order, separator, compressor and attributes Strata meant.
TEST(ZarrPythonInteropTest, ZarrPythonReadsEncodedV2Metadata) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       fmt::format("strata_metadata_test_{}", static_cast<long>(getpid()));
  fs::remove_all(dir);
  struct Array {
    const char* name;
    ArrayMetadata metadata;
    const char* expected;  // what the script below prints for it
  };
  std::vector<Array> arrays;
  auto add = [&](const char* name, DTypeId dtype, Endian endian, std::vector<int> transpose,
                 std::vector<BytesCodecSpec> codecs, FillValue fill, char separator,
                 const char* expected) {
    ArrayMetadata m;
    m.shape = {6, 4};
    m.chunk_shape = {4, 3};
    m.encoding.dtype = dtype;
    m.encoding.endian = endian;
    m.encoding.transpose = std::move(transpose);
    m.encoding.bytes_codecs = std::move(codecs);
    m.fill_value = std::move(fill);
    m.chunk_key_encoding.separator = separator;
    arrays.push_back({name, std::move(m), expected});
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  add("f8", DTypeId::kFloat64, Endian::kLittle, {}, {BloscSpec{.cname = "zstd", .shuffle = 2}},
      FillOf(nan), '.',
      "f8 float64 nan C . Blosc(cname='zstd', clevel=5, shuffle=BITSHUFFLE, blocksize=0)");
  add("i2", DTypeId::kInt16, Endian::kBig, {1, 0}, {ZstdSpec{.level = 7}}, FillOf<int16_t>(-3), '/',
      "i2 >i2 -3 F / Zstd(level=7)");
  add("u8", DTypeId::kUInt64, Endian::kLittle, {}, {ZlibSpec{.level = 2}},
      FillOf(std::numeric_limits<uint64_t>::max()), '.',
      "u8 uint64 18446744073709551615 C . Zlib(level=2)");
  add("c16", DTypeId::kComplex128, Endian::kLittle, {}, {GzipSpec{.level = 4}},
      ComplexFillOf(1.5, -2.0), '.', "c16 complex128 (1.5-2j) C . GZip(level=4)");
  add("b1", DTypeId::kBool, Endian::kLittle, {}, {Lz4Spec{.acceleration = 3}}, FillOf(uint8_t{1}),
      '.', "b1 bool True C . LZ4(acceleration=3)");
  add("f4", DTypeId::kFloat32, Endian::kLittle, {}, {}, FillValue{{}, true}, '.',
      "f4 float32 None C . None");
  arrays[0].metadata.attributes_json = R"({"nan": NaN, "s": "h\u00e9"})";

  // zarr-python 3's API: the v2 specifics are fields of a.metadata
  // (ArrayV2Metadata); the script exits 3 when zarr is missing, so that a
  // wrong interpreter fails the test instead of passing it unchecked.
  std::string script =
      "import sys\n"
      "try:\n"
      "    import zarr\n"
      "except ImportError as e:\n"
      "    print('no zarr:', e)\n"
      "    sys.exit(3)\n"
      "for name in sys.argv[2:]:\n"
      "    a = zarr.open_array(sys.argv[1] + '/' + name, mode='r', zarr_format=2)\n"
      "    m = a.metadata\n"
      "    print(name, a.dtype, a.fill_value, m.order, m.dimension_separator, repr(m.compressor))\n"
      "a = zarr.open_array(sys.argv[1] + '/f8', mode='r', zarr_format=2)\n"
      "print(sorted(a.attrs.asdict().items()))\n"
      "print(a.shape, int(a[...].size), int((a[...] != a[...]).sum()))\n";
  std::string names;
  for (const Array& a : arrays) {
    ASSERT_TRUE(a.metadata.Validate().ok()) << a.metadata.Validate().ToString();
    fs::create_directories(dir / a.name);
    for (const auto& [key, text] : a.metadata.Encode()) {
      std::ofstream(dir / a.name / key) << text;
    }
    names += std::string(" ") + a.name;
  }
  std::ofstream(dir / "check.py") << script;
  const std::string python = PythonInterpreter();
  auto [exit_status, out] = RunCommand(fmt::format("{} -W ignore {} {}{} 2>&1", python,
                                                   (dir / "check.py").string(), dir.string(),
                                                   names));
  fs::remove_all(dir);
  ASSERT_EQ(exit_status, 0) << python << " (zarr-python 3) failed to read the arrays:\n" << out;
  std::string expected;
  for (const Array& a : arrays) expected += std::string(a.expected) + "\n";
  expected += "[('nan', nan), ('s', 'h\u00e9')]\n";
  // No chunk is stored: every element reads as the NaN fill value.
  expected += "(6, 4) 24 24\n";
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace strata::testing_zarr
