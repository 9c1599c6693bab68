#include "strata/storage/s3/s3_test_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
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

FakeHttpServer::FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  STRATA_CHECK(fd_ >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  STRATA_CHECK(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  STRATA_CHECK(::listen(fd_, 16) == 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

FakeHttpServer::~FakeHttpServer() {
  stop_ = true;
  thread_.join();
  for (int client : held_) ::close(client);
  ::close(fd_);
}

std::string FakeHttpServer::endpoint() const { return fmt::format("http://127.0.0.1:{}", port_); }

std::vector<FakeHttpServer::Request> FakeHttpServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int FakeHttpServer::ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  STRATA_CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // bound, never listened on: connections to it are refused
  return ntohs(addr.sin_port);
}

namespace {

// Waits up to 20 ms for `fd` to be readable.
bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 20) > 0;
}

}  // namespace

void FakeHttpServer::Serve() {
  while (!stop_) {
    if (!Readable(fd_)) continue;
    int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::string data;
    char buf[4096];
    size_t header_end;
    bool closed = false;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos && !stop_) {
      if (!Readable(client)) continue;
      ssize_t n = ::read(client, buf, sizeof(buf));
      if (n <= 0) {
        closed = true;
        break;
      }
      data.append(buf, static_cast<size_t>(n));
    }
    if (closed || header_end == std::string::npos) {
      ::close(client);
      continue;
    }
    Request request;
    std::string_view head(data.data(), header_end);
    size_t line_end = head.find("\r\n");
    std::string_view first = head.substr(0, line_end);
    size_t sp1 = first.find(' ');
    size_t sp2 = first.find(' ', sp1 + 1);
    request.method = std::string(first.substr(0, sp1));
    request.target = std::string(first.substr(sp1 + 1, sp2 - sp1 - 1));
    size_t content_length = 0;
    while (line_end != std::string_view::npos) {
      size_t next = head.find("\r\n", line_end + 2);
      std::string_view line = head.substr(line_end + 2, next == std::string_view::npos
                                                            ? std::string_view::npos
                                                            : next - line_end - 2);
      line_end = next;
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string name(line.substr(0, colon));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      request.headers[name] = std::string(value);
      if (name == "content-length") content_length = std::stoul(std::string(value));
    }
    request.body = data.substr(header_end + 4);
    while (request.body.size() < content_length && !stop_) {
      if (!Readable(client)) continue;
      ssize_t n = ::read(client, buf, sizeof(buf));
      if (n <= 0) break;
      request.body.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    Reply reply = handler_(request);
    if (reply.hang) {
      held_.push_back(client);  // open and silent until the server stops
      continue;
    }
    std::string text = fmt::format(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", reply.status,
        reply.body.size(), reply.body);
    for (size_t sent = 0; sent < text.size();) {
      ssize_t n = ::send(client, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(client);
  }
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_, old_->c_str(), 1);
  } else {
    ::unsetenv(name_);
  }
}

HermeticAwsEnvironment::HermeticAwsEnvironment() : dir_("strata-aws") {
  for (const char* name :
       {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3", "AWS_STS_REGIONAL_ENDPOINTS",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
        "AWS_EC2_METADATA_V1_DISABLED", "AWS_METADATA_SERVICE_TIMEOUT",
        "AWS_METADATA_SERVICE_NUM_ATTEMPTS"}) {
    env_.push_back(std::make_unique<ScopedEnv>(name, nullptr));
  }
  // Never the real instance metadata address from a test.
  env_.push_back(std::make_unique<ScopedEnv>("AWS_EC2_METADATA_DISABLED", "true"));
  env_.push_back(
      std::make_unique<ScopedEnv>("AWS_SHARED_CREDENTIALS_FILE", credentials_file().c_str()));
  env_.push_back(std::make_unique<ScopedEnv>("AWS_CONFIG_FILE", config_file().c_str()));
}

std::string UniqueS3Prefix() {
  static std::atomic<int> next{0};
  return fmt::format("t{}-{}", ::getpid(), next.fetch_add(1));
}

}  // namespace strata
