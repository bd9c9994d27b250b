#include "server/admin/admin_channel.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "common/logging.hpp"
#include "common/unique_fd.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using asio::local::stream_protocol;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// Whether a process answers on the unix socket at `path` (a live gateway's channel).
bool someone_listens(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
}

// A socket a gateway that is gone left at `path` is removed; anything else there throws.
void clear_stale(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error("cannot inspect " + path + ": " + std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode))
    throw std::runtime_error(path + " exists and is not a socket; move it away");
  if (someone_listens(path))
    throw std::runtime_error("another gateway answers on " + path +
                             " (two gateways must not share a state directory)");
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error("cannot remove the stale " + path + ": " + std::strerror(errno));
}

// The peer's uid and pid (SO_PEERCRED: as they were when it connected); nothing if unknown.
std::optional<ucred> peer_of(stream_protocol::socket& socket) {
  ucred cred{};
  socklen_t size = sizeof cred;
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0)
    return std::nullopt;
  return cred;
}

}  // namespace

std::string admin_socket_path(const std::string& state_dir) {
  return state_dir + "/admin.sock";
}

struct AdminChannel::State {
  explicit State(asio::any_io_executor executor) : acceptor(asio::make_strand(executor)) {}
  stream_protocol::acceptor acceptor;
  AdminHandler handler;
  std::atomic<std::size_t> open{0};
};

namespace {

// One connection: the peer's uid checked, one line read within the bounds, one answer written.
asio::awaitable<void> serve_connection(std::shared_ptr<AdminChannel::State> state,
                                       stream_protocol::socket socket) {
  struct Release {
    std::atomic<std::size_t>& open;
    ~Release() { --open; }
  } release{state->open};
  const auto peer = peer_of(socket);
  if (!peer || peer->uid != ::geteuid()) {
    log_event(LogLevel::warn, "admin_refused",
              {{"peer_uid", peer ? static_cast<long>(peer->uid) : -1L},
               {"peer_pid", peer ? static_cast<long>(peer->pid) : -1L},
               {"why", "not the gateway's user"}});
    std::string refusal =
        R"({"ok":false,"error":"refused: only the gateway's user may use this channel"})"
        "\n";
    co_await asio::async_write(socket, asio::buffer(refusal), kTuple);
    co_return;
  }
  asio::steady_timer deadline(socket.get_executor());
  deadline.expires_after(std::chrono::seconds(AdminChannel::kRequestSeconds));
  deadline.async_wait([&socket](boost::system::error_code ec) {
    if (!ec) socket.close(ec);
  });
  std::string line;
  auto [ec, n] = co_await asio::async_read_until(
      socket, asio::dynamic_buffer(line, AdminChannel::kMaxRequestBytes), '\n', kTuple);
  deadline.cancel();
  std::string answer;
  if (ec) {
    // Too long, too slow, or closed before a whole line: told when it can still hear it.
    answer =
        R"({"ok":false,"error":"the request must be one JSON line of at most 4096 bytes, sent within 5 s"})";
  } else {
    line.resize(n - 1);
    answer = state->handler(line, peer->uid);
  }
  answer += "\n";
  if (socket.is_open()) co_await asio::async_write(socket, asio::buffer(answer), kTuple);
}

asio::awaitable<void> accept_loop(std::shared_ptr<AdminChannel::State> state) {
  for (;;) {
    auto [wait_ec] =
        co_await state->acceptor.async_wait(stream_protocol::acceptor::wait_read, kTuple);
    if (wait_ec == asio::error::operation_aborted || !state->acceptor.is_open()) co_return;
    // accept4 with SOCK_CLOEXEC (Asio's accept passes no flags): a sandbox started on another
    // thread at that moment cannot inherit the operator's connection (as the HTTP listener).
    int fd =
        ::accept4(state->acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The connection stays pending and the socket readable: back off instead of spinning.
        asio::steady_timer backoff(state->acceptor.get_executor(), std::chrono::milliseconds(50));
        co_await backoff.async_wait(kTuple);
      }
      continue;  // EAGAIN, ECONNABORTED, EINTR
    }
    stream_protocol::socket socket(asio::make_strand(state->acceptor.get_executor()));
    boost::system::error_code ec;
    socket.assign(stream_protocol(), fd, ec);
    if (ec) {
      ::close(fd);
      continue;
    }
    // Beyond the bound a connection is closed at once: the operator's tools make one at a time.
    if (state->open.load() >= AdminChannel::kMaxConnections) continue;
    ++state->open;
    auto executor = socket.get_executor();
    asio::co_spawn(executor, serve_connection(state, std::move(socket)), asio::detached);
  }
}

}  // namespace

AdminChannel::AdminChannel(asio::any_io_executor executor, std::string path, AdminHandler handler)
    : path_(std::move(path)), state_(std::make_shared<State>(executor)) {
  if (path_.size() >= sizeof(sockaddr_un::sun_path))
    throw std::runtime_error(path_ + " is too long for a unix socket (at most " +
                             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes)");
  clear_stale(path_);
  state_->handler = std::move(handler);
  stream_protocol::endpoint endpoint(path_);
  // Opened with SOCK_CLOEXEC (Asio's open() does not pass it): a sandbox's supervisor, exec'ed
  // from a clone of this process, must never inherit the operator's socket.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw std::runtime_error(std::string("admin socket: ") + std::strerror(errno));
  boost::system::error_code assign_ec;
  state_->acceptor.assign(endpoint.protocol(), fd, assign_ec);
  if (assign_ec) {
    ::close(fd);
    throw std::runtime_error("admin socket: " + assign_ec.message());
  }
  // Inside a 0700 directory of the gateway's user: nobody else reaches it before the chmod.
  state_->acceptor.bind(endpoint);
  if (::chmod(path_.c_str(), 0600) != 0) {
    const int error = errno;
    ::unlink(path_.c_str());
    throw std::runtime_error("cannot make " + path_ + " 0600: " + std::strerror(error));
  }
  state_->acceptor.listen(static_cast<int>(kMaxConnections));
}

AdminChannel::~AdminChannel() {
  stop();
}

void AdminChannel::start() {
  asio::co_spawn(state_->acceptor.get_executor(), accept_loop(state_), asio::detached);
}

void AdminChannel::stop() {
  if (!state_) return;
  asio::post(state_->acceptor.get_executor(), [state = state_] {
    boost::system::error_code ignored;
    state->acceptor.close(ignored);
  });
  ::unlink(path_.c_str());
  state_.reset();
}

}  // namespace sandgate::server
