// AbciServer: the socket side of ABCI (CometBFT v0.38's socket protocol). CometBFT connects four
// times (consensus, mempool, query, snapshot); each connection gets a thread that reads frames
// (abci_frame.h), hands every request to the handler in arrival order and writes the responses in
// the same order. Responses are written when the bytes read so far hold no further whole frame,
// so a Flush (which CometBFT sends after each batch) is always answered promptly.
//
// Bad input never crashes the server or reaches the handler: a length prefix over the cap or a
// malformed varint gets a ResponseException and the connection is closed (the stream cannot be
// resynchronised); a body that is not a Request, or names no known method, gets a
// ResponseException and the connection goes on; a peer that disconnects mid-frame only ends its
// own connection.
#ifndef POLNODE_LEDGER_ABCI_SERVER_H_
#define POLNODE_LEDGER_ABCI_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "polnode/abci.pb.h"
#include "polnode/base/status.h"
#include "polnode/ledger/abci_frame.h"

namespace polnode::node {

/// Answers one request; called from the connection threads, possibly at once (AbciApp::Handle
/// serializes them itself).
using AbciHandler = std::function<abci::Response(const abci::Request& request)>;

class AbciServer {
 public:
  /// Listens on `address`: "tcp://IPV4:PORT" (PORT 0 picks a free port, see port()) or
  /// "unix:///path/to.sock" (an existing socket file there is replaced). kInvalidArgument for
  /// another form; kIOError when the socket cannot be bound. `handler` must stay valid until the
  /// server is stopped.
  [[nodiscard]] static Result<std::unique_ptr<AbciServer>> Start(const std::string& address, AbciHandler handler,
                                                                 std::size_t max_frame_bytes = kMaxAbciFrameBytes);
  ~AbciServer();
  AbciServer(const AbciServer&) = delete;
  AbciServer& operator=(const AbciServer&) = delete;

  /// Stops accepting, closes every connection and joins the threads. Idempotent.
  void Stop();

  /// The bound TCP port (0 for a unix socket).
  std::uint16_t port() const { return port_; }

 private:
  AbciServer(int listen_fd, std::uint16_t port, AbciHandler handler, std::size_t max_frame_bytes);
  void AcceptLoop();
  void Serve(int fd);

  const int listen_fd_;
  const std::uint16_t port_;
  const AbciHandler handler_;
  const std::size_t max_frame_bytes_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;                       // guards connections_ and threads_
  std::vector<int> connections_;        // open connection sockets
  std::vector<std::thread> threads_;    // one per accepted connection
  std::thread acceptor_;
};

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_ABCI_SERVER_H_
