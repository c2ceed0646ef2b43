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
#include <thread>

#include "polnode/rpc/http_client.h"

namespace polnode::node {
namespace {

// A connected loopback TCP socket, closed on destruction.
class RawSocket {
 public:
  explicit RawSocket(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
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
