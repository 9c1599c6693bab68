#include "strata/runtime/mpi_tier.h"

#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <map>

#include "strata/base/mpi.h"
#include "strata/base/thread_annotations.h"

namespace strata {
namespace {

// Tags of the block server's messages (the executor uses others).
constexpr int kTagServe = 0x5301;      // a request to a server
constexpr int kTagServeData = 0x5302;  // its answer: a header, then the bytes

enum RequestType : int64_t { kFetch = 1, kErase = 2, kStop = 3, kSuperseded = 4 };

// One request at a time per rank, so that a header and its bytes are never
// interleaved with another request's from the same owner.
Mutex fetch_mu;

std::span<const std::byte> AsBytes(const std::vector<int64_t>& v) {
  return std::as_bytes(std::span(v));
}

// The header of an answer: the status code, then its message.
std::vector<std::byte> EncodeHeader(const Status& s) {
  std::vector<std::byte> out(sizeof(int64_t) + s.message().size());
  const int64_t code = static_cast<int64_t>(s.code());
  std::memcpy(out.data(), &code, sizeof code);
  if (!s.message().empty()) {
    std::memcpy(out.data() + sizeof code, s.message().data(), s.message().size());
  }
  return out;
}

Status DecodeHeader(const std::vector<std::byte>& bytes) {
  if (bytes.size() < sizeof(int64_t)) return InternalError("short block server header");
  int64_t code = 0;
  std::memcpy(&code, bytes.data(), sizeof code);
  if (code == 0) return Status::Ok();
  return Status(static_cast<StatusCode>(code),
                std::string(reinterpret_cast<const char*>(bytes.data()) + sizeof code,
                            bytes.size() - sizeof code));
}

}  // namespace

MpiIntermediateStore::MpiIntermediateStore(int op, ChunkGrid grid, DType dtype,
                                           std::unique_ptr<IntermediateStore> local,
                                           std::function<int(Index)> owner,
                                           std::shared_ptr<MemoryPool> staging)
    : op_(op),
      grid_(std::move(grid)),
      dtype_(dtype),
      local_(std::move(local)),
      owner_(std::move(owner)),
      staging_(std::move(staging)) {}

int MpiIntermediateStore::Owner(std::span<const Index> block) const {
  return owner_(LinearIndex(block, grid_.grid_shape()));
}

Status MpiIntermediateStore::Put(std::span<const Index> block, NDArray data,
                                 MemoryPool& staging) {
  return local_->Put(block, std::move(data), staging);
}

Result<std::shared_ptr<const NDArray>> MpiIntermediateStore::Get(std::span<const Index> block,
                                                                 MemoryPool& pool) {
  const int owner = Owner(block);
  STRATA_RETURN_IF_ERROR(CheckOwner(owner, block));
  if (owner == mpi::Rank()) return local_->Get(block, pool);
  STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(pool, dtype_, grid_.BlockShape(block)));
  const RegionRead read{Shape(block.begin(), block.end()), Box::FromShape(a.shape()), a.view()};
  const RegionRead* reads[] = {&read};
  STRATA_RETURN_IF_ERROR(Fetch(owner, reads));
  return std::make_shared<const NDArray>(std::move(a));
}

Status MpiIntermediateStore::CheckOwner(int owner, std::span<const Index> block) const {
  if (owner >= 0 && owner < mpi::Size()) return Status::Ok();
  return InternalError(fmt::format("no rank is known to hold block {} of op {}",
                                   JoinIndices(block, '.'), op_));
}

Result<BlockView> MpiIntermediateStore::View(std::span<const Index> block, MemoryPool& pool) {
  if (Owner(block) == mpi::Rank()) return local_->View(block, pool);
  return IntermediateStore::View(block, pool);
}

Status MpiIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                       const ArrayView& out, MemoryPool& staging) {
  const RegionRead read{Shape(block.begin(), block.end()), region, out};
  return GetRegions(std::span(&read, 1), staging);
}

Status MpiIntermediateStore::GetRegions(std::span<const RegionRead> reads, MemoryPool& staging) {
  std::map<int, std::vector<const RegionRead*>> remote;  // by owner
  for (const RegionRead& r : reads) {
    if (r.region.empty()) continue;
    const int owner = Owner(r.block);
    STRATA_RETURN_IF_ERROR(CheckOwner(owner, r.block));
    if (owner == mpi::Rank()) {
      STRATA_RETURN_IF_ERROR(local_->GetRegion(r.block, r.region, r.out, staging));
    } else {
      remote[owner].push_back(&r);
    }
  }
  for (const auto& [owner, list] : remote) STRATA_RETURN_IF_ERROR(Fetch(owner, list));
  return Status::Ok();
}

Status MpiIntermediateStore::Fetch(int owner, std::span<const RegionRead* const> reads) {
  const int64_t rank = grid_.rank();
  std::vector<int64_t> request = {kFetch, op_, static_cast<int64_t>(reads.size()), rank};
  for (const RegionRead* r : reads) {
    request.push_back(LinearIndex(r->block, grid_.grid_shape()));
    request.insert(request.end(), r->region.origin.begin(), r->region.origin.end());
    request.insert(request.end(), r->region.shape.begin(), r->region.shape.end());
  }
  MutexLock lock(&fetch_mu);
  STRATA_RETURN_IF_ERROR(mpi::Send(owner, kTagServe, AsBytes(request))
                             .WithContext(fmt::format("asking rank {} for blocks", owner)));
  // The owner answers each region in order, a header and then its bytes, and
  // stops at the first region it cannot serve.
  for (const RegionRead* r : reads) {
    Result<std::vector<std::byte>> header = mpi::ReceiveAny(owner, kTagServeData, nullptr);
    Status s = header.ok() ? DecodeHeader(*header) : header.status();
    if (s.ok() && r->out.is_contiguous()) {
      s = mpi::Receive(owner, kTagServeData, r->out.bytes());
    } else if (s.ok()) {
      // A strided destination (a slice of a larger block): stage the region.
      Result<NDArray> staged = NDArray::Allocate(*staging_, dtype_, r->region.shape);
      s = staged.status();
      if (s.ok()) s = mpi::Receive(owner, kTagServeData, staged->bytes());
      if (s.ok()) CopyArray(staged->view(), r->out);
    }
    if (!s.ok()) {
      return s.WithContext(fmt::format("fetching block {} from rank {}",
                                       JoinIndices(r->block, '.'), owner));
    }
    bytes_fetched_ += r->region.num_elements() * dtype_.size();
  }
  return Status::Ok();
}

Status MpiIntermediateStore::EraseLocal(Index linear) {
  Shape block(grid_.rank());
  UnravelIndex(linear, grid_.grid_shape(), block);
  return local_->Erase(block);
}

Status MpiIntermediateStore::Answer::Finish() {
  Status s = header_send.Finish();
  Status d = data_send.Finish();
  return s.ok() ? d : s;
}

Result<MpiIntermediateStore::Answer> MpiIntermediateStore::StartServe(int to, Index linear,
                                                                      const Box& region,
                                                                      MemoryPool& pool) {
  Shape block(grid_.rank());
  UnravelIndex(linear, grid_.grid_shape(), block);
  // A region that is contiguous in a block held in RAM (the whole block, or
  // a band of whole rows, as a rechunk's slices often are) goes out without
  // a copy; any other region is staged contiguous first.
  Answer answer;
  std::span<const std::byte> bytes;
  Status s;
  if (auto* memory = dynamic_cast<MemoryIntermediateStore*>(local_.get())) {
    answer.held = memory->InRam(block);
  }
  if (answer.held && answer.held->view().Slice(region).is_contiguous()) {
    bytes = answer.held->view().Slice(region).bytes();
  } else {
    answer.held.reset();
    Result<NDArray> buffer = NDArray::Allocate(pool, dtype_, region.shape);
    s = buffer.status();
    if (s.ok()) s = local_->GetRegion(block, region, buffer->view(), pool);
    if (s.ok()) {
      answer.staged = *std::move(buffer);
      bytes = answer.staged.bytes();
    }
  }
  answer.header = EncodeHeader(s);
  STRATA_ASSIGN_OR_RETURN(answer.header_send, mpi::StartSend(to, kTagServeData, answer.header));
  if (!s.ok()) return answer;  // the reader reports it
  STRATA_ASSIGN_OR_RETURN(answer.data_send, mpi::StartSend(to, kTagServeData, bytes));
  answer.served = true;
  return answer;
}

Status MpiIntermediateStore::Erase(std::span<const Index> block) {
  const int owner = Owner(block);
  STRATA_RETURN_IF_ERROR(CheckOwner(owner, block));
  if (owner == mpi::Rank()) return local_->Erase(block);
  std::vector<int64_t> request = {kErase, op_, LinearIndex(block, grid_.grid_shape()),
                                  static_cast<int64_t>(block.size())};
  return mpi::Send(owner, kTagServe, AsBytes(request));
}

BlockServer::BlockServer(std::vector<MpiIntermediateStore*> stores,
                         std::shared_ptr<MemoryPool> pool,
                         std::function<void(int64_t)> superseded)
    : stores_(std::move(stores)), pool_(std::move(pool)), superseded_(std::move(superseded)) {}

Status BlockServer::TellSuperseded(int rank, int64_t attempt_id) {
  std::vector<int64_t> request = {kSuperseded, attempt_id, 0, 0};
  return mpi::Send(rank, kTagServe, AsBytes(request));
}

Status BlockServer::EraseOn(int rank, int op, Index linear_block) {
  std::vector<int64_t> request = {kErase, op, linear_block, 0};
  return mpi::Send(rank, kTagServe, AsBytes(request));
}

BlockServer::~BlockServer() {
  if (thread_.joinable()) {
    // Not stopped by rank 0 (a failure on the way): stop it from here.
    std::vector<int64_t> request = {kStop, -1, -1, 0};
    if (mpi::Send(mpi::Rank(), kTagServe, AsBytes(request)).ok()) {
      thread_.join();
    } else {
      thread_.detach();
    }
  }
}

void BlockServer::Start() { thread_ = std::thread([this] { Loop(); }); }

Status BlockServer::StopAll() {
  std::vector<int64_t> request = {kStop, -1, -1, 0};
  Status first;
  for (int r = 0; r < mpi::Size(); ++r) {
    Status s = mpi::Send(r, kTagServe, AsBytes(request));
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status BlockServer::Join() {
  if (thread_.joinable()) thread_.join();
  return status_;
}

void BlockServer::Loop() {
  while (true) {
    int from = -1;
    Result<std::vector<std::byte>> message = mpi::ReceiveAny(-1, kTagServe, &from);
    if (!message.ok()) {
      status_ = message.status();
      return;
    }
    std::vector<int64_t> request(message->size() / sizeof(int64_t));
    if (!request.empty()) {
      std::memcpy(request.data(), message->data(), request.size() * sizeof(int64_t));
    }
    if (request.size() >= 1 && request[0] == kStop) return;
    if (request.size() >= 2 && request[0] == kSuperseded) {
      if (superseded_) superseded_(request[1]);
      continue;
    }
    Status s = Serve(from, request);
    if (!s.ok() && status_.ok()) status_ = s;
  }
}

Status BlockServer::Serve(int from, std::span<const int64_t> request) {
  const bool known = request.size() >= 4 && request[1] >= 0 &&
                     request[1] < static_cast<int64_t>(stores_.size()) && stores_[request[1]];
  if (known && request[0] == kErase) return stores_[request[1]]->EraseLocal(request[2]);
  // kFetch, op, count, rank, then per region: linear block, origin, shape.
  const int64_t count = known ? request[2] : -1;
  const int64_t rank = known ? request[3] : -1;
  if (!known || request[0] != kFetch || count < 0 || rank < 0 ||
      request.size() != 4 + static_cast<size_t>(count * (1 + 2 * rank))) {
    return InternalError(fmt::format("rank {} sent a malformed block request", from));
  }
  // Regions go out without waiting for the reader to take the previous ones,
  // up to kWindowBytes in flight (and always at least one): the reader finds
  // each header, and its bytes ready to move, as soon as it has the previous
  // region. Waiting for each region in turn instead left the reader waiting
  // ~0.4 ms a region for this thread to be scheduled on a busy host.
  constexpr int64_t kWindowBytes = int64_t{64} << 20;
  MpiIntermediateStore& store = *stores_[request[1]];
  std::deque<std::pair<MpiIntermediateStore::Answer, int64_t>> window;  // with its bytes
  int64_t in_flight = 0;
  Status status;
  for (int64_t i = 0; i < count; ++i) {
    auto item = request.begin() + 4 + i * (1 + 2 * rank);
    Box region(Shape(item + 1, item + 1 + rank), Shape(item + 1 + rank, item + 1 + 2 * rank));
    const int64_t bytes = region.num_elements() * store.dtype().size();
    while (!window.empty() && in_flight + bytes > kWindowBytes && status.ok()) {
      status = window.front().first.Finish();
      in_flight -= window.front().second;
      window.pop_front();
    }
    if (!status.ok()) break;
    Result<MpiIntermediateStore::Answer> answer = store.StartServe(from, *item, region, *pool_);
    if (!answer.ok()) {
      status = answer.status();
      break;
    }
    const bool served = answer->served;
    window.emplace_back(*std::move(answer), bytes);
    in_flight += bytes;
    if (!served) break;  // the reader stops at the same region
  }
  for (auto& [answer, bytes] : window) {
    Status s = answer.Finish();
    if (status.ok()) status = s;
  }
  return status;
}

}  // namespace strata
