#pragma once
// The operator's channel to a running gateway: a unix socket in its state directory (0600, the
// gateway's user; never the MCP port, never reachable over the network). One request line and
// one answer line per connection; a peer whose uid (SO_PEERCRED) is not the gateway's is refused
// and logged. What it answers is the handler's business (admin_requests).
#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace sandgate::server {

// The answer line to one request line from a peer of the gateway's own uid.
using AdminHandler = std::function<std::string(std::string_view request, unsigned peer_uid)>;

// <state dir>/admin.sock: where the gateway listens and the CLI verbs connect.
std::string admin_socket_path(const std::string& state_dir);

class AdminChannel {
 public:
  // Bounds on what a peer can make the gateway hold: a request line, connections at once, and
  // how long one may take to send its line.
  static constexpr std::size_t kMaxRequestBytes = 4096;
  static constexpr std::size_t kMaxConnections = 8;
  static constexpr int kRequestSeconds = 5;

  // Binds `path`, made 0600. A socket left there by a gateway that is gone is replaced; one a
  // live gateway answers on, or anything that is not a socket, is not touched (throws
  // std::runtime_error saying why), nor is a path too long for a unix socket.
  AdminChannel(boost::asio::any_io_executor executor, std::string path, AdminHandler handler);
  ~AdminChannel();  // stop()
  AdminChannel(const AdminChannel&) = delete;
  AdminChannel& operator=(const AdminChannel&) = delete;

  void start();  // accepts until stop()
  // Closes the listener and removes the socket (a clean exit leaves none behind).
  void stop();
  const std::string& path() const { return path_; }
  // The listener and what its connections share (admin_channel.cpp).
  struct State;

 private:
  std::string path_;
  std::shared_ptr<State> state_;
};

}  // namespace sandgate::server
