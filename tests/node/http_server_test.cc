// HttpServer over real loopback sockets: limits, timeouts and malformed input, and that the server
// keeps answering afterwards. Also HandleRawRequest, the socket-free entry point the fuzzer uses.
#include "polnode/rpc/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "polnode/rpc/http_client.h"

namespace polnode::node {
namespace {

// A connected loopback TCP socket, closed on destruction.
class RawSocket {
 public:
  // Connects from `source` (any 127.0.0.0/8 address is loopback: distinct sources are distinct
  // peers to the server).
  explicit RawSocket(std::uint16_t port, const char* source = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawSocket() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool Send(std::string_view bytes) { return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()); }
  // Reads until the peer closes or `timeout` passes; returns what arrived.
  std::string ReadAll(std::chrono::milliseconds timeout, bool* closed = nullptr) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (::poll(&p, 1, std::max(left, 1)) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        if (closed) *closed = true;
        return out;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    if (closed) *closed = false;
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

HttpResponse Echo(const HttpRequest& r) {
  if (r.target == "/throw") throw std::runtime_error("handler bug");
  HttpResponse resp;
  resp.content_type = "text/plain";
  resp.body = r.method + " " + r.target + " " + std::to_string(r.body.size());
  return resp;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.limits.max_body_bytes = 1024;
    options.limits.read_timeout = std::chrono::milliseconds(400);
    auto server = HttpServer::Start(options, Echo, [this](int status) { responses_[status % 600]++; });
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    endpoint_ = HttpEndpoint{"127.0.0.1", server_->port()};
  }

  void ExpectStillServing() {
    auto r = HttpCall(endpoint_, "GET", "/still-alive");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "GET /still-alive 0");
  }

  std::array<std::atomic<int>, 600> responses_{};
  std::unique_ptr<HttpServer> server_;
  HttpEndpoint endpoint_;
};

TEST_F(HttpServerTest, ServesRequestsOverLoopback) {
  auto r = HttpCall(endpoint_, "POST", "/v1/x?y=1", "hello", "text/plain");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "text/plain");
  EXPECT_EQ(r->body, "POST /v1/x?y=1 5");
  EXPECT_EQ(responses_[200].load(), 1);
}

TEST_F(HttpServerTest, OversizedBodyGets413AndServerKeepsServing) {
  auto r = HttpCall(endpoint_, "POST", "/v1/tx", std::string(4096, 'x'), "application/octet-stream");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("\"error\""), std::string::npos);
  EXPECT_EQ(responses_[413].load(), 1);
  ExpectStillServing();
}

TEST_F(HttpServerTest, DeclaredOversizedBodyIsRefusedBeforeItArrives) {
  RawSocket s(server_->port());
  ASSERT_TRUE(s.connected());
  ASSERT_TRUE(s.Send("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n"));
  std::string answer = s.ReadAll(std::chrono::milliseconds(2000));
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  ExpectStillServing();
}

TEST_F(HttpServerTest, GarbageBytesGet400AndServerKeepsServing) {
  RawSocket s(server_->port());
  ASSERT_TRUE(s.connected());
  ASSERT_TRUE(s.Send(std::string("\x16\x03\x01\x02\x00garbage\r\n\r\n", 16)));
  bool closed = false;
  std::string answer = s.ReadAll(std::chrono::milliseconds(2000), &closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_TRUE(closed);
  ExpectStillServing();
}

TEST_F(HttpServerTest, OversizedHeadersGet400) {
  RawSocket s(server_->port());
  ASSERT_TRUE(s.connected());
  ASSERT_TRUE(s.Send("GET / HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n"));
  std::string answer = s.ReadAll(std::chrono::milliseconds(2000));
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer.substr(0, 80);
  ExpectStillServing();
}

TEST_F(HttpServerTest, SlowlorisConnectionIsClosedAtTheReadTimeout) {
  RawSocket s(server_->port());
  ASSERT_TRUE(s.connected());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(s.Send("GET / HTTP/1.1\r\nHost: x\r\n"));
  // Trickle one header byte every 50 ms: steady progress, but never a complete request.
  bool closed = false;
  for (int i = 0; i < 60 && !closed; ++i) {
    if (!s.Send("X")) break;
    s.ReadAll(std::chrono::milliseconds(50), &closed);
    // Other clients are served meanwhile.
    if (i == 2) ExpectStillServing();
  }
  if (!closed) s.ReadAll(std::chrono::milliseconds(500), &closed);
  const auto held = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed) << "the server kept a slowloris connection open";
  EXPECT_LT(held, std::chrono::milliseconds(5000));  // generous: the machine may be loaded
  ExpectStillServing();
}

TEST_F(HttpServerTest, KeepAliveConnectionServesSeveralRequests) {
  RawSocket s(server_->port());
  ASSERT_TRUE(s.connected());
  ASSERT_TRUE(s.Send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string answer = s.ReadAll(std::chrono::milliseconds(2000));
  EXPECT_NE(answer.find("GET /a 0"), std::string::npos);
  EXPECT_NE(answer.find("GET /b 0"), std::string::npos);
}

TEST_F(HttpServerTest, ThrowingHandlerBecomes500) {
  auto r = HttpCall(endpoint_, "GET", "/throw");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  ExpectStillServing();
}

TEST_F(HttpServerTest, StopIsIdempotentAndRefusesNewConnections) {
  const std::uint16_t port = server_->port();
  server_->Stop();
  server_->Stop();
  auto r = HttpCall(HttpEndpoint{"127.0.0.1", port}, "GET", "/", {}, {}, std::chrono::milliseconds(500));
  EXPECT_FALSE(r.ok());
}

// Issue 15 finding 4: no cap on connections or buffered bodies (40 connections x 4 MiB took a node
// from 51 MB to 211 MB). One peer now gets a bounded share of connections, the bodies being read
// share a bounded budget, and a request without a body (a status query) is still answered.
class HttpLimitsTest : public ::testing::Test {
 protected:
  void Start(const HttpLimits& limits) {
    HttpServerOptions options;
    options.threads = 2;
    options.limits = limits;
    auto server = HttpServer::Start(options, Echo, nullptr);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }
  // A GET from 127.0.0.1 (another peer than the load's).
  void ExpectStatusAnswered() {
    auto r = HttpCall(HttpEndpoint{"127.0.0.1", server_->port()}, "GET", "/v1/status");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
  }
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpLimitsTest, OnePeerCannotTakeEveryConnection) {
  HttpLimits limits;
  limits.max_connections_per_peer = 3;
  limits.read_timeout = std::chrono::seconds(30);
  Start(limits);
  std::vector<std::unique_ptr<RawSocket>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawSocket>(server_->port(), "127.0.0.2"));
    ASSERT_TRUE(held.back()->connected());
    ASSERT_TRUE(held.back()->Send("GET /a HTTP/1.1\r\nHost: x\r\n"));  // headers never finish
  }
  RawSocket fourth(server_->port(), "127.0.0.2");
  ASSERT_TRUE(fourth.connected());
  bool closed = false;
  const std::string answer = fourth.ReadAll(std::chrono::seconds(5), &closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_TRUE(closed);
  ExpectStatusAnswered();
  held.clear();  // the slots come back
  for (int attempt = 0; attempt < 200; ++attempt) {
    RawSocket again(server_->port(), "127.0.0.2");
    if (again.Send("GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") &&
        again.ReadAll(std::chrono::seconds(5)).rfind("HTTP/1.1 200", 0) == 0) {
      return;
    }
  }
  ADD_FAILURE() << "the peer's slots never came back";
}

TEST_F(HttpLimitsTest, BodiesBeingReadShareABoundedBudgetAndStatusStillAnswers) {
  HttpLimits limits;
  limits.max_body_bytes = 4 << 20;
  limits.max_buffered_body_bytes = 16 << 20;
  limits.read_timeout = std::chrono::seconds(30);
  Start(limits);
  // 40 connections from 40 peers each announce a 4 MiB body and trickle it.
  int admitted = 0;
  int refused = 0;
  std::vector<std::unique_ptr<RawSocket>> load;
  for (int i = 0; i < 40; ++i) {
    const std::string source = "127.0.1." + std::to_string(i + 1);
    load.push_back(std::make_unique<RawSocket>(server_->port(), source.c_str()));
    ASSERT_TRUE(load.back()->connected());
    ASSERT_TRUE(load.back()->Send("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\nabc"));
  }
  for (auto& socket : load) {
    bool closed = false;
    const std::string answer = socket->ReadAll(std::chrono::milliseconds(300), &closed);
    if (answer.rfind("HTTP/1.1 503", 0) == 0) {
      ++refused;
    } else {
      EXPECT_TRUE(answer.empty()) << answer;  // still reading its body
      ++admitted;
    }
  }
  EXPECT_EQ(admitted, 4);  // 16 MiB / 4 MiB
  EXPECT_EQ(refused, 36);
  RecordProperty("bodies_admitted", admitted);
  RecordProperty("bodies_refused", refused);
  ExpectStatusAnswered();
}

TEST(HttpServerStartTest, PortInUseIsUnavailable) {
  auto first = HttpServer::Start(HttpServerOptions{}, Echo, nullptr);
  ASSERT_TRUE(first.ok());
  HttpServerOptions same;
  same.port = (*first)->port();
  auto second = HttpServer::Start(same, Echo, nullptr);
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  HttpServerOptions bad;
  bad.host = "not an address";
  EXPECT_EQ(HttpServer::Start(bad, Echo, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST(HandleRawRequestTest, ParsesAndAppliesLimitsWithoutSockets) {
  HttpLimits limits;
  limits.max_body_bytes = 16;
  HttpResponse ok = HandleRawRequest("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", limits, Echo);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "POST /p 3");
  EXPECT_EQ(HandleRawRequest("POST /p HTTP/1.1\r\nContent-Length: 17\r\n\r\n", limits, Echo).status, 413);
  EXPECT_EQ(HandleRawRequest("\x01\x02 nonsense", limits, Echo).status, 400);
  EXPECT_EQ(HandleRawRequest("GET / HTTP/1.1\r\nHost: x\r\n", limits, Echo).status, 400);  // incomplete
  EXPECT_EQ(HandleRawRequest("", limits, Echo).status, 400);
  EXPECT_EQ(HandleRawRequest("GET /throw HTTP/1.1\r\n\r\n", limits, Echo).status, 500);
}

}  // namespace
}  // namespace polnode::node
