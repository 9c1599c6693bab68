#include "strata/storage/location.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace strata {
namespace {

namespace fs = std::filesystem;

// "a//b/" -> "a/b" (keeps one leading '/' when `keep_root`).
std::string CollapseSlashes(std::string_view text, bool keep_root) {
  std::string out;
  for (char c : text) {
    if (c == '/' && (out.empty() ? !keep_root : out.back() == '/')) continue;
    out += c;
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (!keep_root && !out.empty() && out.back() == '/') out.pop_back();
  return out;
}

Result<Location> ResolveLocal(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty path");
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(std::string(text)), ec);
  if (ec) return ErrnoToStatus(ec.value(), fmt::format("resolving {}", text));
  // Symlinks of the existing part are followed; the rest is normalised
  // lexically ("new/../x" is "x").
  fs::path resolved = fs::weakly_canonical(p, ec);
  if (ec) resolved = p.lexically_normal();
  Location l;
  l.kind = Location::Kind::kLocal;
  l.path = CollapseSlashes(resolved.lexically_normal().string(), /*keep_root=*/true);
  return l;
}

}  // namespace

std::string Location::ToString() const {
  switch (kind) {
    case Kind::kLocal:
      return path;
    case Kind::kS3:
      return path.empty() ? fmt::format("s3://{}", bucket)
                          : fmt::format("s3://{}/{}", bucket, path);
    case Kind::kMemory:
      return path;
  }
  return path;
}

Result<Location> ResolveLocation(std::string_view url) {
  if (url.rfind("memory://", 0) == 0) {
    Location l;
    l.kind = Location::Kind::kMemory;
    l.path = std::string(url);
    return l;
  }
  if (url.rfind("s3://", 0) == 0) {
    std::string_view rest = url.substr(5);
    rest = rest.substr(0, rest.find('?'));
    const size_t slash = rest.find('/');
    Location l;
    l.kind = Location::Kind::kS3;
    l.bucket = std::string(rest.substr(0, slash));
    if (l.bucket.empty()) {
      return InvalidArgumentError(
          fmt::format("'{}' names no bucket (expected s3://bucket/prefix)", url));
    }
    if (slash != std::string_view::npos) {
      l.path = CollapseSlashes(rest.substr(slash + 1), /*keep_root=*/false);
    }
    return l;
  }
  std::string_view path = url;
  if (path.rfind("file://", 0) == 0) path.remove_prefix(7);
  if (const size_t scheme = path.find("://"); scheme != std::string_view::npos) {
    return InvalidArgumentError(
        fmt::format("unsupported URL scheme '{}' in '{}'", path.substr(0, scheme), url));
  }
  return ResolveLocal(path);
}

bool Overlaps(const Location& a, const Location& b) {
  if (a.kind != b.kind || a.kind == Location::Kind::kMemory) return false;
  if (a.bucket != b.bucket) return false;
  // Component-wise prefix: "/d/a" contains "/d/a/x" but not "/d/ab".
  auto contains = [](const std::string& outer, const std::string& inner) {
    if (outer.empty() || outer == "/") return true;
    if (inner.size() < outer.size() || inner.compare(0, outer.size(), outer) != 0) return false;
    return inner.size() == outer.size() || inner[outer.size()] == '/';
  };
  return contains(a.path, b.path) || contains(b.path, a.path);
}

Status CheckDisjoint(std::string_view read, std::string_view read_label, std::string_view write,
                     std::string_view write_label) {
  STRATA_ASSIGN_OR_RETURN(Location r, ResolveLocation(read));
  STRATA_ASSIGN_OR_RETURN(Location w, ResolveLocation(write));
  if (!Overlaps(r, w)) return Status::Ok();
  std::string how;
  if (r.path == w.path) {
    how =
        fmt::format("{} and {} are the same location ({})", read_label, write_label, r.ToString());
  } else if (r.path.size() < w.path.size()) {
    how =
        fmt::format("{} {} lies inside {} {}", write_label, w.ToString(), read_label, r.ToString());
  } else {
    how =
        fmt::format("{} {} lies inside {} {}", read_label, r.ToString(), write_label, w.ToString());
  }
  return InvalidArgumentError(fmt::format(
      "{}: writing there would destroy what is read; choose another {}", how, write_label));
}

}  // namespace strata
