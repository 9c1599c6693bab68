// Location: where a Zarr node lives, in a normal form in which two spellings
// of one place compare equal, so that a write can be refused when it would
// land on (or inside, or around) what it reads.
//
// A local path is made absolute and resolved through every symlink of the
// part that exists (std::filesystem::weakly_canonical: "a.zarr/", "./a.zarr",
// "x/../a.zarr", "//data//a.zarr", a symlink to a.zarr and "." from inside it
// are all one location); the part that does not exist yet is normalised
// lexically. An s3:// URL is its bucket and its key prefix with empty
// components dropped ("s3://b//x/" is "s3://b/x"); the endpoint and the query
// are ignored, so one bucket and prefix on two endpoints count as one place
// (a refusal that errs on the safe side). memory:// URLs never alias: each
// opens a store of its own.
//
// Thread-safety: plain values and free functions (ResolveLocation reads the
// filesystem and the working directory).
#ifndef STRATA_STORAGE_LOCATION_H_
#define STRATA_STORAGE_LOCATION_H_

#include <string>
#include <string_view>

#include "strata/base/status.h"

namespace strata {

struct Location {
  enum class Kind { kLocal, kS3, kMemory };
  Kind kind = Kind::kLocal;
  // kS3: the bucket; empty otherwise.
  std::string bucket;
  // kLocal: an absolute path without a trailing '/'; kS3: the key prefix
  // without leading, trailing or doubled '/'; kMemory: the URL as given.
  std::string path;

  // "/abs/a.zarr", "s3://bucket/prefix", for messages.
  std::string ToString() const;
};

// The location of a path or URL as OpenStoreUrl understands it.
// InvalidArgument for an unsupported scheme or an S3 URL without a bucket.
Result<Location> ResolveLocation(std::string_view url);

// True when `a` and `b` are the same place or one lies inside the other.
bool Overlaps(const Location& a, const Location& b);

// InvalidArgument, naming both and how they overlap, when `read` (what is
// read: a source, labelled `read_label`) and `write` (what is written,
// labelled `write_label`) are the same location or one contains the other.
// Labels are for the message: "SRC", "DST", "--work-dir".
Status CheckDisjoint(std::string_view read, std::string_view read_label, std::string_view write,
                     std::string_view write_label);

}  // namespace strata

#endif  // STRATA_STORAGE_LOCATION_H_
