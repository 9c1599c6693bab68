// MPI for the `mpi` executor: initialization, the host grouping of ranks, and
// point-to-point messages that wait by polling.
//
// Strata talks over its own duplicate of MPI_COMM_WORLD, so a user program's
// messages never meet Strata's. Every call here that names "collective" must
// be made by every rank in the same order.
//
// Waiting polls (MPI_Test / MPI_Improbe) with a short spin and then sleeps of
// up to 1 ms, instead of blocking in MPI: Open MPI's blocking calls spin a
// core, and a rank has threads that wait most of the time (the scheduler's,
// the block server's).
//
// This header has no MPI types, so code using it builds without MPI; when
// Strata was built without MPI, Built() is false and every other call
// returns Unimplemented (or 0 / 1 for Rank / Size).
//
// Thread-safety: after Init(), every function may be called from any thread
// (MPI_THREAD_MULTIPLE). Messages between one pair of ranks with one tag are
// received in the order they were sent only when one thread sends them.
#ifndef STRATA_BASE_MPI_H_
#define STRATA_BASE_MPI_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strata/base/status.h"

namespace strata::mpi {

// True when this build of Strata has MPI.
bool Built();

// Initializes MPI with MPI_THREAD_MULTIPLE unless the program already did
// (then it must have asked for that level), and makes Strata's communicator.
// A program that let Strata initialize MPI has it finalized at exit.
// Collective. Idempotent.
Status Init();

// True after Init() succeeded.
bool Active();

// This rank and the number of ranks (0 and 1 before Init).
int Rank();
int Size();

// How the ranks sit on hosts (MPI_Comm_split_type: ranks sharing memory).
struct HostLayout {
  int hosts = 1;
  // Per rank: its host's index (in order of the host's lowest rank) and how
  // many ranks share that host.
  std::vector<int> host_of_rank;
  std::vector<int> ranks_on_host;
  // Per host: its name (gethostname on its lowest rank).
  std::vector<std::string> host_names;
};
// Collective.
Result<HostLayout> Layout();

// The sum over hosts of a per-host value (each host's lowest rank
// contributes its own value). Collective.
Result<int64_t> SumOverHosts(int64_t per_host_value);

// Collective.
Status Barrier();

// Sends `data` to `dest` with `tag`, in pieces of at most kPieceBytes.
inline constexpr size_t kPieceBytes = size_t{64} << 20;
Status Send(int dest, int tag, std::span<const std::byte> data);
// A Send in progress (StartSend): `data` must stay valid, and unchanged,
// until Finish. Finish (or destruction, which ignores errors) waits for it.
class PendingSend {
 public:
  PendingSend();
  PendingSend(PendingSend&&) noexcept;
  PendingSend& operator=(PendingSend&&) noexcept;
  ~PendingSend();
  Status Finish();
  // True once every piece has gone (Finish then returns at once); errors as
  // Finish's.
  Result<bool> Test();

 private:
  friend Result<PendingSend> StartSend(int dest, int tag, std::span<const std::byte> data);
  struct Requests;
  std::unique_ptr<Requests> requests_;
};
// Like Send, but returns once every piece is posted: messages to one rank go
// out while the caller prepares the next.
Result<PendingSend> StartSend(int dest, int tag, std::span<const std::byte> data);
// Receives a message of exactly out.size() bytes sent by Send.
Status Receive(int source, int tag, std::span<std::byte> out);
// Receives the next message with `tag` from `source` (-1: any rank) whatever
// its size, which must be at most kPieceBytes; *from is the sender.
Result<std::vector<std::byte>> ReceiveAny(int source, int tag, int* from);
// Like ReceiveAny, but returns false at once when nothing is waiting.
Result<bool> TryReceiveAny(int source, int tag, int* from, std::vector<std::byte>* out);

// Ends the whole job (MPI_Abort on Strata's communicator) with exit code
// `code`: for a rank that cannot go on and cannot tell the others in any
// other way (a hung rank). Returns only without MPI.
void Abort(int code);

// Collective: root's bytes to every rank.
Status Broadcast(std::span<std::byte> data, int root);
// Collective: the bytes ORed over ranks, on every rank.
Status AllOr(std::span<std::byte> data);
// Collective: every rank's value, on every rank.
Result<std::vector<int64_t>> AllGather(int64_t value);

}  // namespace strata::mpi

#endif  // STRATA_BASE_MPI_H_
