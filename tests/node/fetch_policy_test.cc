// The fetch policy for URIs named on the ledger (fetch_policy.h) and FetchGet (http_client.h) over
// real loopback sockets: a server started by the test answers as each case scripts it, and counts
// connections, so a refusal is shown to happen before anything reaches the network.
#include "polnode/rpc/fetch_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "polnode/base/file_util.h"
#include "polnode/rpc/http_client.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using namespace std::chrono_literals;

FetchPolicy Policy(std::string_view allow, std::uint64_t max_bytes = FetchPolicy::kDefaultMaxBytes,
                   int max_redirects = FetchPolicy::kDefaultMaxRedirects) {
  Result<FetchPolicy> policy = FetchPolicy::Make("http", allow, max_bytes, max_redirects);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? *policy : FetchPolicy();
}

IpAddress Ip(std::string_view text) {
  std::optional<IpAddress> ip = IpAddress::Parse(text);
  EXPECT_TRUE(ip.has_value()) << text;
  return ip.value_or(IpAddress());
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// A loopback HTTP server whose every answer is written by the test: `handler` gets the connected
// socket and the request target, and writes whatever bytes the case needs.
class ScriptedServer {
 public:
  using Handler = std::function<void(int fd, const std::string& target)>;

  explicit ScriptedServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ScriptedServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    ::close(listen_fd_);
  }

  std::uint16_t port() const { return port_; }
  std::string Url(std::string_view path) const { return "http://127.0.0.1:" + std::to_string(port_) + std::string(path); }
  int connections() const { return connections_.load(); }

 private:
  void Loop() {
    while (true) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      std::string request;
      char buf[1024];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        request.append(buf, static_cast<std::size_t>(n));
      }
      const std::size_t first_space = request.find(' ');
      const std::size_t second_space = request.find(' ', first_space + 1);
      const std::string target = first_space == std::string::npos || second_space == std::string::npos
                                     ? std::string()
                                     : request.substr(first_space + 1, second_space - first_space - 1);
      handler_(fd, target);
      ::close(fd);
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

std::string Ok(std::string_view body) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body);
}

std::string Redirect(std::string_view location) {
  return "HTTP/1.1 302 Found\r\nLocation: " + std::string(location) + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

// ---- URI parsing ------------------------------------------------------------------------------

TEST(FetchUriTest, ParsesTheFormsTheLedgerCarries) {
  Result<FetchUri> uri = ParseFetchUri("http://127.0.0.1:7001/v1/proofs/ab");
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(uri->scheme, "http");
  EXPECT_EQ(uri->host, "127.0.0.1");
  EXPECT_EQ(uri->port, 7001);
  EXPECT_EQ(uri->target, "/v1/proofs/ab");

  uri = ParseFetchUri("HTTP://Proofs.Example.ORG/x?y=1");
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(uri->scheme, "http");
  EXPECT_EQ(uri->host, "proofs.example.org");
  EXPECT_EQ(uri->port, 80);
  EXPECT_EQ(uri->target, "/x?y=1");

  uri = ParseFetchUri("http://[::1]:8080");
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(uri->host, "::1");
  EXPECT_EQ(uri->target, "/");
  EXPECT_EQ(uri->Origin(), "http://[::1]:8080");
}

TEST(FetchUriTest, RefusesAmbiguousOrMalformedUris) {
  for (const char* bad : {"", "127.0.0.1:80/x", "://h/x", "http://", "http:///x", "http://h:0/x", "http://h:65536/x",
                          "http://h:8x/x", "http://user@10.0.0.5/x", "http://trusted.example@127.0.0.1/",
                          "http://h/x#frag", "http://h/a b", "http://h/\x01", "http://[::1/x", "http://[zz]/x",
                          "http://[127.0.0.1]/x", "http://h%2e/x", "ftp://h/x", "1http://h/x"}) {
    Result<FetchUri> uri = ParseFetchUri(bad);
    EXPECT_EQ(uri.status().code(), StatusCode::kInvalidArgument)
        << "'" << bad << "' parsed as host " << (uri.ok() ? uri->host : "");
  }
  EXPECT_FALSE(ParseFetchUri("http://h/" + std::string(5000, 'a')).ok());
}

// ---- addresses and rules ----------------------------------------------------------------------

TEST(FetchPolicyTest, ClassifiesAddresses) {
  EXPECT_EQ(ClassOf(Ip("127.0.0.1")), AddressClass::kLoopback);
  EXPECT_EQ(ClassOf(Ip("127.255.0.9")), AddressClass::kLoopback);
  EXPECT_EQ(ClassOf(Ip("::1")), AddressClass::kLoopback);
  EXPECT_EQ(ClassOf(Ip("::ffff:127.0.0.1")), AddressClass::kLoopback) << "IPv4-mapped takes the IPv4 class";
  for (const char* p : {"10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "169.254.169.254",
                        "fd00::1", "fe80::1", "::ffff:10.0.0.1", "64:ff9b::a00:1"}) {
    EXPECT_EQ(ClassOf(Ip(p)), AddressClass::kPrivate) << p;
  }
  for (const char* p : {"0.0.0.0", "0.1.2.3", "224.0.0.1", "255.255.255.255", "240.0.0.1", "::", "ff02::1", "::10.0.0.1"}) {
    EXPECT_EQ(ClassOf(Ip(p)), AddressClass::kReserved) << p;
  }
  for (const char* p : {"8.8.8.8", "172.32.0.1", "100.128.0.1", "2001:db8::1", "::ffff:1.1.1.1"}) {
    EXPECT_EQ(ClassOf(Ip(p)), AddressClass::kPublic) << p;
  }
}

TEST(FetchPolicyTest, TheDefaultAllowsHttpToPublicAddressesOnly) {
  const FetchPolicy policy;
  const FetchUri uri = *ParseFetchUri("http://proofs.example.org/x");
  EXPECT_TRUE(policy.CheckScheme(uri).ok());
  EXPECT_TRUE(policy.AllowsAddress(uri, Ip("93.184.216.34")));
  for (const char* refused : {"127.0.0.1", "::1", "10.0.0.5", "169.254.169.254", "192.168.0.1", "fd00::1", "0.0.0.0",
                              "::ffff:127.0.0.1"}) {
    EXPECT_FALSE(policy.AllowsAddress(uri, Ip(refused))) << refused;
  }
  EXPECT_EQ(policy.max_bytes(), FetchPolicy::kDefaultMaxBytes);
  EXPECT_EQ(policy.max_redirects(), FetchPolicy::kDefaultMaxRedirects);
}

TEST(FetchPolicyTest, RulesMatchBlocksNamesAndPorts) {
  const FetchPolicy policy = Policy("10.1.0.0/16, [fd00::]/8:8443, proofs.example.org:8080, *.cdn.example, 192.0.2.7");
  const FetchUri any = *ParseFetchUri("http://h.example/x");
  EXPECT_TRUE(policy.AllowsAddress(any, Ip("10.1.200.3")));
  EXPECT_FALSE(policy.AllowsAddress(any, Ip("10.2.0.1")));
  EXPECT_TRUE(policy.AllowsAddress(any, Ip("192.0.2.7")));
  EXPECT_FALSE(policy.AllowsAddress(any, Ip("192.0.2.8")));
  EXPECT_FALSE(policy.AllowsAddress(any, Ip("fd00::1"))) << "port 80, not 8443";
  EXPECT_TRUE(policy.AllowsAddress(*ParseFetchUri("http://h.example:8443/x"), Ip("fd12::1")));
  // A name rule trusts the name, whatever it resolves to, on its port only.
  EXPECT_TRUE(policy.AllowsAddress(*ParseFetchUri("http://PROOFS.example.org:8080/x"), Ip("127.0.0.1")));
  EXPECT_FALSE(policy.AllowsAddress(*ParseFetchUri("http://proofs.example.org/x"), Ip("127.0.0.1")));
  EXPECT_TRUE(policy.AllowsAddress(*ParseFetchUri("http://a.b.cdn.example/x"), Ip("8.8.8.8")));
  EXPECT_FALSE(policy.AllowsAddress(*ParseFetchUri("http://cdn.example/x"), Ip("8.8.8.8")));
  EXPECT_FALSE(policy.AllowsAddress(*ParseFetchUri("http://evilcdn.example/x"), Ip("8.8.8.8")));
  EXPECT_FALSE(policy.AllowsAddress(any, Ip("8.8.8.8"))) << "public is not among the rules";
}

TEST(FetchPolicyTest, MakeRefusesWhatItCannotHonour) {
  auto code = [](std::string_view schemes, std::string_view allow, std::uint64_t max_bytes, int redirects) {
    return FetchPolicy::Make(schemes, allow, max_bytes, redirects).status().code();
  };
  EXPECT_EQ(code("https", "public", 1024, 0), StatusCode::kInvalidArgument) << "no TLS in this build";
  EXPECT_EQ(code("", "public", 1024, 0), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("http", "", 1024, 0), StatusCode::kInvalidArgument);
  for (const char* rule : {"10.0.0.0/33", "[::1]/129", "10.0.0.0/", "host.example/8", "*", "*.", "a*.example",
                           "public:0", "public:http", "[::1", "[10.0.0.1]", "bad host"}) {
    EXPECT_EQ(code("http", rule, 1024, 0), StatusCode::kInvalidArgument) << rule;
  }
  EXPECT_EQ(code("http", "public", 0, 0), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("http", "public", FetchPolicy::kMaxMaxBytes + 1, 0), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("http", "public", 1024, -1), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("http", "public", 1024, FetchPolicy::kMaxMaxRedirects + 1), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("HTTP, http", " loopback , private ", 1024, 0), StatusCode::kOk);
}

TEST(FetchPolicyTest, LoadsRoleTomlAndWritesItBack) {
  polnode::testing::TempDir dir;
  Result<FetchPolicy> missing = FetchPolicy::Load(dir.File("role.toml"));
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->allow_text(), "public") << "no file: the default";

  const FetchPolicy written = Policy("loopback,10.0.0.0/8:9000", 4096, 1);
  ASSERT_TRUE(WriteFileAtomically(dir.File("role.toml"), written.ConfigText()).ok());
  Result<FetchPolicy> loaded = FetchPolicy::Load(dir.File("role.toml"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->allow_text(), "loopback,10.0.0.0/8:9000");
  EXPECT_EQ(loaded->max_bytes(), 4096u);
  EXPECT_EQ(loaded->max_redirects(), 1);

  for (const char* bad : {"[fetch]\nallow = 5\n", "[fetch]\nmax_bytes = \"big\"\n", "[fetch]\nmax_bytes = -1\n",
                          "[fetch]\nmax_redirects = 99999999999\n", "[fetch]\nallow = \"nowhere/8\"\n",
                          "[fetch]\nalow = \"loopback\"\n", "[ledger]\nlisten = \"127.0.0.1:1\"\n", "[fetch]\nallow = \n"}) {
    ASSERT_TRUE(WriteFileAtomically(dir.File("role.toml"), std::string_view(bad)).ok());
    Result<FetchPolicy> policy = FetchPolicy::Load(dir.File("role.toml"));
    EXPECT_EQ(policy.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

// ---- FetchGet over loopback -------------------------------------------------------------------

TEST(FetchGetTest, AnAllowedFetchReturnsTheBody) {
  ScriptedServer server([](int fd, const std::string& target) { SendAll(fd, Ok("body of " + target)); });
  Result<std::string> body = FetchGet(Policy("loopback"), server.Url("/v1/specs/ab"), 1 << 20, 10s);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "body of /v1/specs/ab");
  // "localhost" resolves to loopback addresses only, which the rule allows.
  body = FetchGet(Policy("loopback"), "http://localhost:" + std::to_string(server.port()) + "/x", 1 << 20, 10s);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "body of /x");
}

TEST(FetchGetTest, ARefusedSchemeNeverConnects) {
  ScriptedServer server([](int fd, const std::string&) { SendAll(fd, Ok("x")); });
  const std::string port = std::to_string(server.port());
  Result<std::string> body = FetchGet(Policy("loopback"), "https://127.0.0.1:" + port + "/x", 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kPermissionDenied) << body.status().ToString();
  EXPECT_NE(body.status().message().find("scheme 'https'"), std::string::npos) << body.status().ToString();
  body = FetchGet(Policy("loopback"), "gopher://127.0.0.1:" + port + "/x", 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kPermissionDenied) << body.status().ToString();
  EXPECT_EQ(server.connections(), 0);
}

TEST(FetchGetTest, ARefusedHostNeverConnectsWhateverItsSpelling) {
  ScriptedServer server([](int fd, const std::string&) { SendAll(fd, Ok("secret")); });
  const std::string port = std::to_string(server.port());
  // The default policy: public addresses only. Every spelling of the loopback address resolves to
  // it, and the resolved address is what is checked (IPv4-mapped IPv6: ClassifiesAddresses).
  for (const std::string& uri : {server.Url("/x"), "http://localhost:" + port + "/x", "http://127.1:" + port + "/x",
                                 "http://2130706433:" + port + "/x"}) {
    Result<std::string> body = FetchGet(FetchPolicy(), uri, 1 << 20, 10s);
    EXPECT_EQ(body.status().code(), StatusCode::kPermissionDenied) << uri << ": " << body.status().ToString();
  }
  // Loopback on another port only.
  Result<std::string> body = FetchGet(Policy(server.port() == 1 ? "loopback:2" : "loopback:1"), server.Url("/x"), 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kPermissionDenied) << body.status().ToString();
  EXPECT_NE(body.status().message().find("127.0.0.1 (loopback)"), std::string::npos) << body.status().ToString();
  EXPECT_EQ(server.connections(), 0);
  // The same host allowed by its port.
  body = FetchGet(Policy("loopback:" + port), server.Url("/x"), 1 << 20, 10s);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "secret");
}

TEST(FetchGetTest, TheSizeLimitHoldsAtTheByte) {
  ScriptedServer server([](int fd, const std::string& target) {
    SendAll(fd, Ok(std::string(target == "/exact" ? 1024 : 1025, 'b')));
  });
  Result<std::string> body = FetchGet(Policy("loopback", 1024), server.Url("/exact"), 1 << 20, 10s);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(body->size(), 1024u);
  body = FetchGet(Policy("loopback", 1024), server.Url("/over"), 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kResourceExhausted) << body.status().ToString();
  // The caller's own limit (a task document's 64 KiB) applies when it is the smaller one.
  body = FetchGet(Policy("loopback"), server.Url("/exact"), 1000, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kResourceExhausted) << body.status().ToString();
}

TEST(FetchGetTest, TheSizeLimitStopsAnEndlessStreamMidway) {
  // Neither Content-Length nor chunking: the body runs until the server closes, which it never
  // does while the client reads. A client that buffered to the end would hang until its timeout
  // (kUnavailable); the limit must end the read as the bytes arrive.
  std::atomic<std::uint64_t> sent{0};
  ScriptedServer server([&](int fd, const std::string&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n");
    const std::string chunk(64 * 1024, 's');
    while (SendAll(fd, chunk)) sent += chunk.size();
  });
  Result<std::string> body = FetchGet(Policy("loopback", 1 << 20), server.Url("/stream"), FetchPolicy::kMaxMaxBytes, 60s);
  EXPECT_EQ(body.status().code(), StatusCode::kResourceExhausted) << body.status().ToString();

  // A chunked body that keeps coming, likewise.
  ScriptedServer chunked([](int fd, const std::string&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "10000\r\n" + std::string(0x10000, 'c') + "\r\n";
    while (SendAll(fd, chunk)) {
    }
  });
  body = FetchGet(Policy("loopback", 1 << 20), chunked.Url("/stream"), FetchPolicy::kMaxMaxBytes, 60s);
  EXPECT_EQ(body.status().code(), StatusCode::kResourceExhausted) << body.status().ToString();

  // A Content-Length over the limit is refused at the header, before any body byte is read.
  ScriptedServer announced([](int fd, const std::string&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n");
  });
  body = FetchGet(Policy("loopback", 1 << 20), announced.Url("/big"), FetchPolicy::kMaxMaxBytes, 60s);
  EXPECT_EQ(body.status().code(), StatusCode::kResourceExhausted) << body.status().ToString();
}

TEST(FetchGetTest, ARedirectMustPassThePolicyToo) {
  ScriptedServer server([](int fd, const std::string& target) {
    if (target == "/to-metadata") {
      SendAll(fd, Redirect("http://169.254.169.254/latest/meta-data/"));
    } else if (target == "/to-private") {
      SendAll(fd, Redirect("http://10.255.255.1:8080/x"));
    } else if (target == "/to-ftp") {
      SendAll(fd, Redirect("ftp://127.0.0.1:21/x"));
    } else if (target == "/relative") {
      SendAll(fd, Redirect("../x"));
    } else if (target == "/same-origin") {
      SendAll(fd, Redirect("/final"));
    } else if (target == "/loop") {
      SendAll(fd, Redirect("/loop"));
    } else {
      SendAll(fd, Ok("final body"));
    }
  });
  const FetchPolicy loopback = Policy("loopback");
  for (const char* path : {"/to-metadata", "/to-private", "/to-ftp", "/relative"}) {
    Result<std::string> body = FetchGet(loopback, server.Url(path), 1 << 20, 10s);
    EXPECT_EQ(body.status().code(), StatusCode::kPermissionDenied) << path << ": " << body.status().ToString();
  }
  EXPECT_EQ(server.connections(), 4) << "only the first hop of each reached a server";
  Result<std::string> refused = FetchGet(loopback, server.Url("/to-metadata"), 1 << 20, 10s);
  EXPECT_NE(refused.status().message().find("169.254.169.254 (private)"), std::string::npos) << refused.status().ToString();
  EXPECT_NE(refused.status().ToString().find("redirected from " + server.Url("/to-metadata")), std::string::npos)
      << refused.status().ToString();

  Result<std::string> body = FetchGet(loopback, server.Url("/same-origin"), 1 << 20, 10s);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "final body");
  // An absolute redirect to an allowed host is followed too.
  body = FetchGet(loopback, server.Url("/x"), 1 << 20, 10s);
  ASSERT_TRUE(body.ok());

  const int before = server.connections();
  body = FetchGet(loopback, server.Url("/loop"), 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kPermissionDenied) << body.status().ToString();
  EXPECT_EQ(server.connections() - before, FetchPolicy::kDefaultMaxRedirects + 1);
  // With redirects off, the first one is refused.
  body = FetchGet(Policy("loopback", FetchPolicy::kDefaultMaxBytes, 0), server.Url("/same-origin"), 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kPermissionDenied) << body.status().ToString();
}

TEST(FetchGetTest, ANon200AnswerIsUnavailable) {
  ScriptedServer server([](int fd, const std::string&) {
    SendAll(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  });
  Result<std::string> body = FetchGet(Policy("loopback"), server.Url("/x"), 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable) << body.status().ToString();
  body = FetchGet(Policy("loopback"), "http://127.0.0.1:1/x", 1 << 20, 10s);
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable) << "nothing listens on port 1";
}

}  // namespace
}  // namespace polnode::node
