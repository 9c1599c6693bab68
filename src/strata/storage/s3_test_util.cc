#include "strata/storage/s3_test_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>

extern char** environ;

namespace strata {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("STRATA_SOURCE_DIR");
  if (dir != nullptr && *dir != '\0') return dir;
#ifdef STRATA_DEFAULT_SOURCE_DIR
  return STRATA_DEFAULT_SOURCE_DIR;
#else
  return ".";
#endif
}

// Reads one line from `fd` within `timeout_ms`; empty on timeout or EOF.
std::string ReadLine(int fd, int timeout_ms) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) return std::string();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) continue;
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return std::string();
    if (c == '\n') return line;
    line += c;
  }
}

}  // namespace

Result<std::unique_ptr<S3TestServer>> S3TestServer::Start(const std::vector<std::string>& buckets) {
  const std::string source = SourceDir();
  const std::string script = source + "/scripts/s3_test_server.js";
  const std::string module = source + "/.deps/s3rver/node_modules/@20minutes/s3rver";
  if (!std::filesystem::exists(script) || !std::filesystem::exists(module)) {
    return FailedPreconditionError(fmt::format(
        "the S3 test server is not installed ({} or {} is missing): run scripts/install-deps.sh",
        script, module));
  }
  std::unique_ptr<S3TestServer> server(new S3TestServer());
  server->dir_ = std::make_unique<TempDir>("strata-s3rver");

  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    return ErrnoToStatus(errno, "creating pipes for the S3 test server");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::vector<std::string> args = {"node",  "--openssl-legacy-provider", script,
                                   "--dir", server->dir_->path(),        "--port",
                                   "0",     "--exit-on-stdin-eof"};
  for (const std::string& b : buckets) {
    args.push_back("--bucket");
    args.push_back(b);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int rc = ::posix_spawnp(&server->pid_, "node", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  server->stdin_fd_ = in[1];
  server->stdout_fd_ = out[0];
  if (rc != 0) {
    server->pid_ = -1;
    return ErrnoToStatus(rc, "starting node for the S3 test server");
  }
  std::string line = ReadLine(server->stdout_fd_, 30'000);
  constexpr std::string_view kReady = "listening 127.0.0.1:";
  if (line.rfind(kReady, 0) != 0) {
    return UnavailableError(
        fmt::format("the S3 test server did not start (it said '{}'; see stderr)", line));
  }
  server->port_ = std::atoi(line.c_str() + kReady.size());
  server->endpoint_ = fmt::format("http://127.0.0.1:{}", server->port_);
  return server;
}

S3TestServer::~S3TestServer() { Stop(); }

void S3TestServer::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    // s3rver closes within milliseconds; do not wait on a wedged one forever.
    for (int i = 0; i < 500 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) ::usleep(10'000);
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdin_fd_ = stdout_fd_ = -1;
}

S3Store::Options S3TestServer::StoreOptions(const std::string& bucket,
                                            const std::string& prefix) const {
  S3Store::Options options;
  options.bucket = bucket;
  options.prefix = prefix;
  options.endpoint = endpoint_;
  options.region = "us-east-1";
  options.access_key_id = kAccessKeyId;
  options.secret_access_key = kSecretAccessKey;
  options.max_retries = 2;
  options.initial_backoff_seconds = 0.01;
  options.max_backoff_seconds = 0.05;
  options.connect_timeout_seconds = 5;
  options.stall_timeout_seconds = 30;
  return options;
}

namespace {

std::mutex shared_mu;
std::unique_ptr<S3TestServer>& SharedSlot() {
  static std::unique_ptr<S3TestServer> server;
  return server;
}

// Stops the shared server when the test program ends.
class SharedServerEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::lock_guard lock(shared_mu);
    SharedSlot().reset();
  }
};

}  // namespace

S3TestServer& SharedS3TestServer() {
  std::lock_guard lock(shared_mu);
  std::unique_ptr<S3TestServer>& slot = SharedSlot();
  if (!slot) {
    Result<std::unique_ptr<S3TestServer>> started = S3TestServer::Start({kS3TestBucket});
    STRATA_CHECK(started.ok()) << started.status().ToString();
    slot = std::move(started).value();
    ::testing::AddGlobalTestEnvironment(new SharedServerEnvironment());
  }
  return *slot;
}

std::string UniqueS3Prefix() {
  static std::atomic<int> next{0};
  return fmt::format("t{}-{}", ::getpid(), next.fetch_add(1));
}

}  // namespace strata
