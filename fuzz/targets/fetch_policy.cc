// Target fetch_policy: the parsers a URI named on the ledger and an operator's role.toml go
// through before a daemon fetches anything (fetch_policy.h); no sockets.
// Input: fetch.allow rules, '\n', a URI, '\n', then 17 bytes of a resolved address (the first
// byte's low bit: IPv6; then 16 address bytes, IPv4 in the first 4).
// Properties: never crashes; a parsed URI has a lower-case scheme, a non-empty host free of '@',
// '/', '#' and whitespace, a non-zero port and a target starting with '/', and its Origin() and
// target parse back to the same URI; an accepted rule list re-made from its own allow_text() is
// the same list; an address's text parses back to the same bytes; the default policy allows an
// address exactly when it is public, and a "loopback" policy exactly when it is loopback.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "polnode/rpc/fetch_policy.h"

namespace polnode::fuzz {
namespace {

using node::AddressClass;
using node::FetchPolicy;
using node::FetchUri;
using node::IpAddress;

// The text before the next '\n' (all of it when there is none); `rest` moves past it.
std::string_view NextLine(std::string_view& rest) {
  const std::size_t nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return line;
}

void CheckUri(std::string_view text) {
  Result<FetchUri> uri = node::ParseFetchUri(text);
  if (!uri.ok()) {
    POLNODE_FUZZ_CHECK(uri.status().code() == StatusCode::kInvalidArgument, "a bad URI is kInvalidArgument");
    return;
  }
  POLNODE_FUZZ_CHECK(!uri->scheme.empty(), "a scheme");
  for (char c : uri->scheme) POLNODE_FUZZ_CHECK(!(c >= 'A' && c <= 'Z'), "the scheme is lower case");
  POLNODE_FUZZ_CHECK(!uri->host.empty(), "a host");
  POLNODE_FUZZ_CHECK(uri->host.find_first_of("@/#?[] \t\r\n%") == std::string::npos, "a plain host");
  POLNODE_FUZZ_CHECK(uri->port != 0, "a port");
  POLNODE_FUZZ_CHECK(!uri->target.empty() && uri->target.front() == '/', "the target is a path");
  Result<FetchUri> again = node::ParseFetchUri(uri->Origin() + uri->target);
  POLNODE_FUZZ_CHECK(again.ok(), "Origin() + target parses");
  POLNODE_FUZZ_CHECK(again->scheme == uri->scheme && again->host == uri->host && again->port == uri->port &&
                         again->target == uri->target,
                     "Origin() + target is the same URI");
}

void Run(FuzzInput input) {
  std::string_view rest(reinterpret_cast<const char*>(input.data()), input.size());
  const std::string_view allow = NextLine(rest);
  const std::string_view uri_text = NextLine(rest);
  CheckUri(uri_text);

  Result<FetchPolicy> policy = FetchPolicy::Make("http", allow, 1024, 1);
  if (policy.ok()) {
    Result<FetchPolicy> again = FetchPolicy::Make("http", policy->allow_text(), 1024, 1);
    POLNODE_FUZZ_CHECK(again.ok() && again->allow_text() == policy->allow_text(), "allow_text() is stable");
  } else {
    POLNODE_FUZZ_CHECK(policy.status().code() == StatusCode::kInvalidArgument, "bad rules are kInvalidArgument");
  }

  if (rest.size() < 17) return;
  IpAddress address;
  address.v6 = (rest[0] & 1) != 0;
  for (std::size_t i = 0; i < 16; ++i) address.bytes[i] = static_cast<std::uint8_t>(rest[1 + i]);
  if (!address.v6) std::fill(address.bytes.begin() + 4, address.bytes.end(), std::uint8_t{0});
  std::optional<IpAddress> parsed = IpAddress::Parse(address.ToString());
  POLNODE_FUZZ_CHECK(parsed && parsed->v6 == address.v6 && parsed->bytes == address.bytes, "address text round trip");

  const Result<FetchUri> uri = node::ParseFetchUri("http://host.example/x");
  POLNODE_FUZZ_CHECK(uri.ok(), "a fixed URI parses");
  const AddressClass address_class = node::ClassOf(address);
  POLNODE_FUZZ_CHECK(FetchPolicy().AllowsAddress(*uri, address) == (address_class == AddressClass::kPublic),
                     "the default allows public addresses only");
  static const FetchPolicy loopback = *FetchPolicy::Make("http", "loopback", 1024, 1);
  POLNODE_FUZZ_CHECK(loopback.AllowsAddress(*uri, address) == (address_class == AddressClass::kLoopback),
                     "loopback allows loopback addresses only");
  if (policy.ok() && uri_text.find("://") != std::string_view::npos) {
    Result<FetchUri> fuzzed = node::ParseFetchUri(uri_text);
    if (fuzzed.ok()) (void)policy->AllowsAddress(*fuzzed, address);
  }
}

Seed Text(std::string name, std::string_view text) { return Seed{std::move(name), std::vector<std::uint8_t>(text.begin(), text.end())}; }

std::vector<Seed> Seeds() {
  // Address bytes: the v6 flag byte, then 16 bytes.
  std::string v4_loopback(17, '\0');
  v4_loopback[1] = '\x7f';
  v4_loopback[4] = '\x01';
  std::string v6_mapped(17, '\0');  // ::ffff:10.0.0.5
  v6_mapped[0] = '\x01';
  v6_mapped[11] = '\xff';
  v6_mapped[12] = '\xff';
  v6_mapped[13] = '\x0a';
  v6_mapped[16] = '\x05';
  return {
      Text("proof-uri", "loopback\nhttp://127.0.0.1:7001/v1/proofs/ab\n" + v4_loopback),
      Text("rules", "10.1.0.0/16, [fd00::]/8:8443, proofs.example.org:8080, *.cdn.example\nHTTP://Proofs.Example.ORG/x?y=1\n" +
                        v6_mapped),
      Text("ipv6", "public,private\nhttp://[::1]:8080\n" + v6_mapped),
      Text("userinfo", "public\nhttp://trusted.example@10.0.0.5/\n"),
      Text("bad-rule", "10.0.0.0/33,*\nhttp://h:65536/x\n"),
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(fetch_policy, Run, Seeds);

}  // namespace polnode::fuzz
