// AbciServer over real loopback sockets (TCP and a unix socket): answers in order across pipelined
// requests, Flush, several connections at once, and the bad input of issue 17 item 6: a length over
// the cap, an unknown request, a body that is not a Request, a peer gone mid-frame.
#include "polnode/ledger/abci_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>

#include "polnode/testing/status_matchers.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using polnode::testing::IsOk;

// A blocking client socket that writes raw bytes and reads whole frames.
class Client {
 public:
  explicit Client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  }
  explicit Client(const std::string& unix_path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, unix_path.c_str(), unix_path.size() + 1);
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { ::close(fd_); }

  bool connected() const { return connected_; }

  void Send(const std::string& bytes) { ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size())); }

  void Send(const abci::Request& request) {
    std::string out;
    ASSERT_TRUE(IsOk(AppendAbciFrame(request, out)));
    Send(out);
  }

  /// The next response, or nullopt when the server closed the connection first.
  std::optional<abci::Response> Read() {
    while (true) {
      auto frame = DecodeAbciFrame(buffer_);
      if (!frame.ok()) return std::nullopt;
      if (frame->has_value()) {
        abci::Response response;
        const bool parsed = response.ParseFromArray((*frame)->body.data(), static_cast<int>((*frame)->body.size()));
        buffer_.erase(0, (*frame)->consumed);
        if (!parsed) return std::nullopt;
        return response;
      }
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

abci::Request Echo(const std::string& message) {
  abci::Request r;
  r.mutable_echo()->set_message(message);
  return r;
}

abci::Request Flush() {
  abci::Request r;
  r.mutable_flush();
  return r;
}

// Echo and Flush as AbciApp answers them; counts the requests that reach it.
struct EchoHandler {
  std::atomic<int>* calls;
  abci::Response operator()(const abci::Request& request) const {
    calls->fetch_add(1);
    abci::Response response;
    if (request.has_echo()) {
      response.mutable_echo()->set_message(request.echo().message());
    } else {
      response.mutable_flush();
    }
    return response;
  }
};

class AbciServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = AbciServer::Start("tcp://127.0.0.1:0", EchoHandler{&calls_}, 1024);
    ASSERT_TRUE(IsOk(server));
    server_ = std::move(server).value();
    ASSERT_NE(server_->port(), 0);
  }

  std::atomic<int> calls_{0};
  std::unique_ptr<AbciServer> server_;
};

TEST_F(AbciServerTest, AnswersPipelinedRequestsInOrderOnEveryConnection) {
  // CometBFT's four connections, each sending a batch in one write and then Flush.
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < 4; ++c) {
    clients.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(clients.back()->connected());
  }
  for (int c = 0; c < 4; ++c) {
    std::string batch;
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(IsOk(AppendAbciFrame(Echo(std::to_string(c) + "/" + std::to_string(i)), batch)));
    ASSERT_TRUE(IsOk(AppendAbciFrame(Flush(), batch)));
    clients[static_cast<std::size_t>(c)]->Send(batch);
  }
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 50; ++i) {
      std::optional<abci::Response> r = clients[static_cast<std::size_t>(c)]->Read();
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->echo().message(), std::to_string(c) + "/" + std::to_string(i));
    }
    std::optional<abci::Response> flush = clients[static_cast<std::size_t>(c)]->Read();
    ASSERT_TRUE(flush.has_value());
    EXPECT_TRUE(flush->has_flush());
  }
  EXPECT_EQ(calls_.load(), 4 * 51);
}

TEST_F(AbciServerTest, AFrameSplitAcrossWritesIsReassembled) {
  Client client(server_->port());
  std::string frame;
  ASSERT_TRUE(IsOk(AppendAbciFrame(Echo(std::string(300, 'z')), frame)));
  for (char byte : frame) client.Send(std::string(1, byte));
  std::optional<abci::Response> r = client.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->echo().message(), std::string(300, 'z'));
}

TEST_F(AbciServerTest, OverLimitLengthGetsAnExceptionAndTheConnectionCloses) {
  Client client(server_->port());
  client.Send(std::string("\x81\x10", 2));  // 2049 bytes announced; the server's cap is 1024
  std::optional<abci::Response> r = client.Read();
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->has_exception());
  EXPECT_NE(r->exception().error().find("exceeds the limit"), std::string::npos);
  EXPECT_FALSE(client.Read().has_value());  // closed
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(AbciServerTest, UnknownAndMalformedRequestsGetExceptionsAndTheConnectionGoesOn) {
  Client client(server_->port());
  client.Send(std::string("\x02\x22\x00", 3));  // a Request naming field 4 (SetOption, gone from ABCI)
  client.Send(std::string("\x02\x0a\x05", 3));  // a Request whose echo field runs past the body
  client.Send(Echo("still here"));
  std::optional<abci::Response> unknown = client.Read();
  ASSERT_TRUE(unknown.has_value());
  EXPECT_TRUE(unknown->has_exception());
  std::optional<abci::Response> malformed = client.Read();
  ASSERT_TRUE(malformed.has_value());
  EXPECT_TRUE(malformed->has_exception());
  std::optional<abci::Response> echo = client.Read();
  ASSERT_TRUE(echo.has_value());
  EXPECT_EQ(echo->echo().message(), "still here");
  EXPECT_EQ(calls_.load(), 1);  // only the echo reached the handler
}

TEST_F(AbciServerTest, APeerGoneMidFrameEndsOnlyItsConnection) {
  {
    Client gone(server_->port());
    gone.Send(std::string("\x40partial", 8));  // 64 bytes announced, 7 sent
  }
  Client next(server_->port());
  next.Send(Echo("after"));
  std::optional<abci::Response> r = next.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->echo().message(), "after");
  EXPECT_EQ(calls_.load(), 1);
}

TEST(AbciServerUnixTest, ServesAUnixSocket) {
  polnode::testing::TempDir dir("abci-unix");
  const std::string path = dir.File("app.sock");
  std::atomic<int> calls{0};
  auto server = AbciServer::Start("unix://" + path, EchoHandler{&calls});
  ASSERT_TRUE(IsOk(server));
  Client client(path);
  ASSERT_TRUE(client.connected());
  client.Send(Echo("over unix"));
  std::optional<abci::Response> r = client.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->echo().message(), "over unix");
  (*server)->Stop();
}

TEST(AbciServerAddressTest, RejectsAddressesItCannotServe) {
  EXPECT_FALSE(AbciServer::Start("127.0.0.1:26658", EchoHandler{}).ok());
  EXPECT_FALSE(AbciServer::Start("tcp://localhost:26658", EchoHandler{}).ok());
  EXPECT_FALSE(AbciServer::Start("tcp://127.0.0.1:70000", EchoHandler{}).ok());
}

}  // namespace
}  // namespace polnode::node
