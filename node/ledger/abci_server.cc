#include "polnode/ledger/abci_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

namespace polnode::node {
namespace {

Status Errno(const std::string& what) { return Status::IOError(what + ": " + std::strerror(errno)); }

// Writes all of `data`; false when the peer is gone.
bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

abci::Response ExceptionResponse(const Status& status) {
  abci::Response response;
  response.mutable_exception()->set_error(status.ToString());
  return response;
}

Result<int> ListenTcp(std::string_view host_port, std::uint16_t& port) {
  const std::size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos) return Status::InvalidArgument("expected tcp://IPV4:PORT");
  const std::string host(host_port.substr(0, colon));
  const std::string_view port_text = host_port.substr(colon + 1);
  unsigned value = 0;
  auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
  if (error != std::errc() || end != port_text.data() + port_text.size() || value > 65535) {
    return Status::InvalidArgument("bad port in tcp://" + std::string(host_port));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(value));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("'" + host + "' is not an IPv4 address");
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    const Status s = Errno("listening on tcp://" + std::string(host_port));
    ::close(fd);
    return s;
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

Result<int> ListenUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) return Status::InvalidArgument("bad unix socket path");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  ::unlink(path.c_str());  // a socket file left by an earlier run (kill -9 leaves one)
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    const Status s = Errno("listening on unix://" + path);
    ::close(fd);
    return s;
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<AbciServer>> AbciServer::Start(const std::string& address, AbciHandler handler,
                                                      std::size_t max_frame_bytes) {
  std::uint16_t port = 0;
  int fd = -1;
  const std::string_view a = address;
  if (a.rfind("tcp://", 0) == 0) {
    POLNODE_ASSIGN_OR_RETURN(fd, ListenTcp(a.substr(6), port));
  } else if (a.rfind("unix://", 0) == 0) {
    POLNODE_ASSIGN_OR_RETURN(fd, ListenUnix(std::string(a.substr(7))));
  } else {
    return Status::InvalidArgument("ABCI address '" + address + "' must be tcp://IPV4:PORT or unix:///PATH");
  }
  std::unique_ptr<AbciServer> server(new AbciServer(fd, port, std::move(handler), max_frame_bytes));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

AbciServer::AbciServer(int listen_fd, std::uint16_t port, AbciHandler handler, std::size_t max_frame_bytes)
    : listen_fd_(listen_fd), port_(port), handler_(std::move(handler)), max_frame_bytes_(max_frame_bytes) {}

AbciServer::~AbciServer() { Stop(); }

void AbciServer::Stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);  // wakes recv(); Serve closes the fd
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void AbciServer::AcceptLoop() {
  while (!stopping_.load()) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // the listening socket was shut down (Stop) or failed
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on unix sockets
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) {
      ::close(fd);
      return;
    }
    connections_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void AbciServer::Serve(int fd) {
  std::string in;
  std::string out;
  std::vector<char> chunk(64 * 1024);
  bool open = true;
  while (open) {
    const ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed by the peer (perhaps mid-frame) or by Stop
    in.append(chunk.data(), static_cast<std::size_t>(n));
    std::size_t used = 0;
    while (true) {
      Result<std::optional<AbciFrame>> frame = DecodeAbciFrame(std::string_view(in).substr(used), max_frame_bytes_);
      if (!frame.ok()) {
        // The length prefix is unusable, so nothing after it can be framed: say why and close.
        (void)AppendAbciFrame(ExceptionResponse(frame.status()), out);
        open = false;
        break;
      }
      if (!frame->has_value()) break;
      used += (*frame)->consumed;
      Result<abci::Request> request = ParseAbciRequest((*frame)->body);
      const abci::Response response = request.ok() ? handler_(*request) : ExceptionResponse(request.status());
      if (Status s = AppendAbciFrame(response, out); !s.ok()) {
        (void)AppendAbciFrame(ExceptionResponse(s), out);
        open = false;
        break;
      }
    }
    in.erase(0, used);
    if (!out.empty()) {
      if (!SendAll(fd, out)) break;
      out.clear();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  connections_.erase(std::remove(connections_.begin(), connections_.end(), fd), connections_.end());
  ::close(fd);
}

}  // namespace polnode::node
