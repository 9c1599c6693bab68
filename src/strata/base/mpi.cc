#include "strata/base/mpi.h"

#include <fmt/format.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#ifdef STRATA_WITH_MPI
#include <mpi.h>
#endif

#include "strata/base/thread_annotations.h"

namespace strata::mpi {

#ifdef STRATA_WITH_MPI

namespace {

MPI_Comm comm = MPI_COMM_NULL;
int rank = 0;
int size = 1;
Mutex init_mu;  // one Init at a time

Status MpiError(int code, std::string_view what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  return UnavailableError(fmt::format("MPI {} failed: {}", what, std::string_view(text, length)));
}

#define STRATA_MPI_CALL(call, what)                         \
  do {                                                      \
    int strata_mpi_code = (call);                           \
    if (strata_mpi_code != MPI_SUCCESS) return MpiError(strata_mpi_code, what); \
  } while (0)

// Spins briefly, then sleeps up to 1 ms between polls.
class Backoff {
 public:
  void Pause() {
    if (++idle_ < 64) {
      sched_yield();
      return;
    }
    long ns = std::min<long>(20'000L * (idle_ - 63), 1'000'000L);
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
  }

 private:
  int idle_ = 0;
};

Status Wait(MPI_Request* request, std::string_view what) {
  Backoff backoff;
  while (true) {
    int done = 0;
    STRATA_MPI_CALL(MPI_Test(request, &done, MPI_STATUS_IGNORE), what);
    if (done) return Status::Ok();
    backoff.Pause();
  }
}

Status CheckActive() {
  if (comm == MPI_COMM_NULL) return FailedPreconditionError("MPI is not initialized");
  return Status::Ok();
}

// Runs `start` (an MPI_I* call that fills *request) on each piece of at most
// kPieceBytes of a `size`-byte buffer, in order, waiting for each (one empty
// piece when size is 0).
template <typename Start>
Status InPieces(size_t size, const char* what, Start start) {
  STRATA_RETURN_IF_ERROR(CheckActive());
  size_t offset = 0;
  do {
    const size_t n = std::min(kPieceBytes, size - offset);
    MPI_Request request;
    STRATA_MPI_CALL(start(offset, static_cast<int>(n), &request), what);
    STRATA_RETURN_IF_ERROR(Wait(&request, what));
    offset += n;
  } while (offset < size);
  return Status::Ok();
}

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool Built() { return true; }

Status Init() {
  MutexLock lock(&init_mu);
  if (comm != MPI_COMM_NULL) return Status::Ok();
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (code != MPI_SUCCESS) return UnavailableError("MPI_Init_thread failed");
    std::atexit(FinalizeAtExit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    return FailedPreconditionError(
        "MPI was initialized without MPI_THREAD_MULTIPLE, which the mpi executor needs "
        "(call MPI_Init_thread with MPI_THREAD_MULTIPLE, or let Strata initialize MPI)");
  }
  STRATA_MPI_CALL(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return Status::Ok();
}

bool Active() { return comm != MPI_COMM_NULL; }
int Rank() { return rank; }
int Size() { return size; }

Result<HostLayout> Layout() {
  STRATA_RETURN_IF_ERROR(CheckActive());
  MPI_Comm host;
  STRATA_MPI_CALL(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host),
                  "MPI_Comm_split_type");
  int host_rank = 0;
  int host_size = 1;
  MPI_Comm_rank(host, &host_rank);
  MPI_Comm_size(host, &host_size);
  // Each rank learns the lowest world rank of its host (the host's name).
  int leader = host_rank == 0 ? rank : 0;
  MPI_Bcast(&leader, 1, MPI_INT, 0, host);
  MPI_Comm_free(&host);
  std::vector<int> leaders(size);
  STRATA_MPI_CALL(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm),
                  "MPI_Allgather");
  // Names are for reports; the grouping is MPI's.
  constexpr int kNameBytes = 256;
  std::vector<char> name(kNameBytes, '\0');
  if (gethostname(name.data(), kNameBytes - 1) != 0) name.assign(kNameBytes, '\0');
  std::vector<char> names(static_cast<size_t>(kNameBytes) * size);
  STRATA_MPI_CALL(MPI_Allgather(name.data(), kNameBytes, MPI_CHAR, names.data(), kNameBytes,
                                MPI_CHAR, comm),
                  "MPI_Allgather");
  HostLayout layout;
  std::vector<int> sorted = leaders;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  layout.hosts = static_cast<int>(sorted.size());
  layout.host_of_rank.resize(size);
  layout.ranks_on_host.resize(size);
  for (int r = 0; r < size; ++r) {
    layout.host_of_rank[r] = static_cast<int>(
        std::lower_bound(sorted.begin(), sorted.end(), leaders[r]) - sorted.begin());
    layout.ranks_on_host[r] =
        static_cast<int>(std::count(leaders.begin(), leaders.end(), leaders[r]));
  }
  for (int leader_rank : sorted) {
    layout.host_names.emplace_back(names.data() + static_cast<size_t>(kNameBytes) * leader_rank);
  }
  return layout;
}

Result<int64_t> SumOverHosts(int64_t per_host_value) {
  STRATA_ASSIGN_OR_RETURN(HostLayout layout, Layout());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> values, AllGather(per_host_value));
  int64_t sum = 0;
  std::vector<bool> counted(layout.hosts, false);
  for (int r = 0; r < size; ++r) {
    const int h = layout.host_of_rank[r];
    if (!counted[h]) {
      counted[h] = true;
      sum += values[r];
    }
  }
  return sum;
}

Status Barrier() {
  STRATA_RETURN_IF_ERROR(CheckActive());
  MPI_Request request;
  STRATA_MPI_CALL(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  return Wait(&request, "MPI_Ibarrier");
}

Status Send(int dest, int tag, std::span<const std::byte> data) {
  return InPieces(data.size(), "MPI_Isend", [&](size_t offset, int n, MPI_Request* request) {
    return MPI_Isend(data.data() + offset, n, MPI_BYTE, dest, tag, comm, request);
  });
}

struct PendingSend::Requests {
  std::vector<MPI_Request> pieces;
};

PendingSend::PendingSend() = default;
PendingSend::PendingSend(PendingSend&&) noexcept = default;
PendingSend& PendingSend::operator=(PendingSend&& other) noexcept {
  if (this != &other) {
    Finish().IgnoreError();
    requests_ = std::move(other.requests_);
  }
  return *this;
}
PendingSend::~PendingSend() { Finish().IgnoreError(); }

Status PendingSend::Finish() {
  if (!requests_) return Status::Ok();
  std::unique_ptr<Requests> requests = std::move(requests_);
  Status first;
  for (MPI_Request& r : requests->pieces) {
    Status s = Wait(&r, "MPI_Isend");
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Result<bool> PendingSend::Test() {
  if (!requests_) return true;
  for (MPI_Request& r : requests_->pieces) {
    if (r == MPI_REQUEST_NULL) continue;
    int done = 0;
    STRATA_MPI_CALL(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Isend");
    if (!done) return false;
  }
  requests_.reset();
  return true;
}

void Abort(int code) {
  MPI_Abort(comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD, code);
}

Result<PendingSend> StartSend(int dest, int tag, std::span<const std::byte> data) {
  STRATA_RETURN_IF_ERROR(CheckActive());
  PendingSend send;
  send.requests_ = std::make_unique<PendingSend::Requests>();
  size_t offset = 0;
  do {  // one empty piece when data is empty, as Send
    const size_t n = std::min(kPieceBytes, data.size() - offset);
    MPI_Request request;
    STRATA_MPI_CALL(MPI_Isend(data.data() + offset, static_cast<int>(n), MPI_BYTE, dest, tag,
                              comm, &request),
                    "MPI_Isend");
    send.requests_->pieces.push_back(request);
    offset += n;
  } while (offset < data.size());
  return send;
}

Status Receive(int source, int tag, std::span<std::byte> out) {
  return InPieces(out.size(), "MPI_Irecv", [&](size_t offset, int n, MPI_Request* request) {
    return MPI_Irecv(out.data() + offset, n, MPI_BYTE, source, tag, comm, request);
  });
}

Result<bool> TryReceiveAny(int source, int tag, int* from, std::vector<std::byte>* out) {
  STRATA_RETURN_IF_ERROR(CheckActive());
  int found = 0;
  MPI_Message message;
  MPI_Status status;
  STRATA_MPI_CALL(MPI_Improbe(source < 0 ? MPI_ANY_SOURCE : source, tag, comm, &found, &message,
                              &status),
                  "MPI_Improbe");
  if (!found) return false;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  out->resize(static_cast<size_t>(count));
  STRATA_MPI_CALL(MPI_Mrecv(out->data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE),
                  "MPI_Mrecv");
  if (from) *from = status.MPI_SOURCE;
  return true;
}

Result<std::vector<std::byte>> ReceiveAny(int source, int tag, int* from) {
  Backoff backoff;
  std::vector<std::byte> out;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool got, TryReceiveAny(source, tag, from, &out));
    if (got) return out;
    backoff.Pause();
  }
}

Status Broadcast(std::span<std::byte> data, int root) {
  return InPieces(data.size(), "MPI_Ibcast", [&](size_t offset, int n, MPI_Request* request) {
    return MPI_Ibcast(data.data() + offset, n, MPI_BYTE, root, comm, request);
  });
}

Status AllOr(std::span<std::byte> data) {
  return InPieces(data.size(), "MPI_Iallreduce", [&](size_t offset, int n, MPI_Request* request) {
    return MPI_Iallreduce(MPI_IN_PLACE, data.data() + offset, n, MPI_BYTE, MPI_BOR, comm,
                          request);
  });
}

Result<std::vector<int64_t>> AllGather(int64_t value) {
  STRATA_RETURN_IF_ERROR(CheckActive());
  std::vector<int64_t> out(size);
  MPI_Request request;
  STRATA_MPI_CALL(
      MPI_Iallgather(&value, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, comm, &request),
      "MPI_Iallgather");
  STRATA_RETURN_IF_ERROR(Wait(&request, "MPI_Iallgather"));
  return out;
}

#else  // !STRATA_WITH_MPI

namespace {
Status NotBuilt() {
  return UnimplementedError("this build of Strata has no MPI (install libopenmpi-dev and rebuild)");
}
}  // namespace

bool Built() { return false; }
Status Init() { return NotBuilt(); }
bool Active() { return false; }
int Rank() { return 0; }
int Size() { return 1; }
Result<HostLayout> Layout() { return NotBuilt(); }
Result<int64_t> SumOverHosts(int64_t) { return NotBuilt(); }
Status Barrier() { return NotBuilt(); }
Status Send(int, int, std::span<const std::byte>) { return NotBuilt(); }
Status Receive(int, int, std::span<std::byte>) { return NotBuilt(); }
struct PendingSend::Requests {};
PendingSend::PendingSend() = default;
PendingSend::PendingSend(PendingSend&&) noexcept = default;
PendingSend& PendingSend::operator=(PendingSend&&) noexcept = default;
PendingSend::~PendingSend() = default;
Status PendingSend::Finish() { return Status::Ok(); }
Result<bool> PendingSend::Test() { return true; }
void Abort(int) {}
Result<PendingSend> StartSend(int, int, std::span<const std::byte>) { return NotBuilt(); }
Result<std::vector<std::byte>> ReceiveAny(int, int, int*) { return NotBuilt(); }
Result<bool> TryReceiveAny(int, int, int*, std::vector<std::byte>*) { return NotBuilt(); }
Status Broadcast(std::span<std::byte>, int) { return NotBuilt(); }
Status AllOr(std::span<std::byte>) { return NotBuilt(); }
Result<std::vector<int64_t>> AllGather(int64_t) { return NotBuilt(); }

#endif  // STRATA_WITH_MPI

}  // namespace strata::mpi
