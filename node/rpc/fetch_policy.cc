#include "polnode/rpc/fetch_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "polnode/base/file_util.h"
#include "polnode/ledger/node_config.h"

namespace polnode::node {
namespace {

constexpr std::size_t kMaxUriBytes = 4096;
constexpr std::uint64_t kMaxConfigBytes = 1 << 20;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The non-empty items of a comma-separated list, trimmed.
std::vector<std::string_view> SplitList(std::string_view text) {
  std::vector<std::string_view> items;
  while (true) {
    const std::size_t comma = text.find(',');
    std::string_view item = TrimSpaces(text.substr(0, comma));
    if (!item.empty()) items.push_back(item);
    if (comma == std::string_view::npos) return items;
    text.remove_prefix(comma + 1);
  }
}

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

// A port in 1..65535 written in decimal digits only.
std::optional<std::uint16_t> ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(port);
}

std::optional<std::uint16_t> DefaultPort(std::string_view scheme) {
  if (scheme == "http") return 80;
  if (scheme == "https") return 443;
  return std::nullopt;
}

// Whether the first `prefix` bits of `a` and `b` agree.
bool SamePrefix(const IpAddress& a, const IpAddress& b, int prefix) {
  for (int bit = 0; bit < prefix; ++bit) {
    const int byte = bit / 8;
    const std::uint8_t mask = static_cast<std::uint8_t>(0x80u >> (bit % 8));
    if ((a.bytes[static_cast<std::size_t>(byte)] & mask) != (b.bytes[static_cast<std::size_t>(byte)] & mask)) return false;
  }
  return true;
}

AddressClass ClassOfV4(const std::uint8_t* b) {
  if (b[0] == 127) return AddressClass::kLoopback;
  if (b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
      (b[0] == 100 && (b[1] & 0xc0) == 64) || (b[0] == 169 && b[1] == 254)) {
    return AddressClass::kPrivate;
  }
  // 0/8 is "this network" (connecting to 0.0.0.0 reaches the local host on Linux); 224/3 is
  // multicast, the reserved 240/4 and the broadcast address.
  if (b[0] == 0 || b[0] >= 224) return AddressClass::kReserved;
  return AddressClass::kPublic;
}

std::string_view ClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic: return "public";
    case AddressClass::kPrivate: return "private";
    case AddressClass::kLoopback: return "loopback";
    case AddressClass::kReserved: return "reserved";
  }
  return "reserved";
}

}  // namespace

std::string FetchUri::Origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<FetchUri> ParseFetchUri(std::string_view uri) {
  const std::string quoted = "'" + std::string(uri.substr(0, 200)) + (uri.size() > 200 ? "...'" : "'");
  auto bad = [&](std::string_view why) { return Status::InvalidArgument("URI " + quoted + ": " + std::string(why)); };
  if (uri.size() > kMaxUriBytes) return bad("longer than 4096 bytes");
  for (char c : uri) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return bad("contains whitespace, a control byte or a non-ASCII byte");
  }
  if (uri.find('#') != std::string_view::npos) return bad("has a fragment");
  const std::size_t sep = uri.find("://");
  if (sep == std::string_view::npos || sep == 0) return bad("has no scheme");
  FetchUri out;
  out.scheme = Lower(uri.substr(0, sep));
  if (!(out.scheme[0] >= 'a' && out.scheme[0] <= 'z') ||
      !std::all_of(out.scheme.begin(), out.scheme.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
      })) {
    return bad("has a malformed scheme");
  }
  std::string_view rest = uri.substr(sep + 3);
  const std::size_t path_at = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path_at);
  std::string_view target = path_at == std::string_view::npos ? std::string_view() : rest.substr(path_at);
  // User info is refused outright: "http://trusted.example@10.0.0.5/" reads as one host and
  // connects to another.
  if (authority.find('@') != std::string_view::npos) return bad("has user info ('@')");
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("has an unterminated IPv6 literal");
    const std::string_view literal = authority.substr(1, close - 1);
    std::optional<IpAddress> ip = IpAddress::Parse(literal);
    if (!ip || !ip->v6) return bad("has a malformed IPv6 literal");
    out.host = Lower(literal);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("has text after its IPv6 literal");
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.find(':');
    std::string_view host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
    }
    if (host.empty()) return bad("has no host");
    if (host.size() > 253 || !std::all_of(host.begin(), host.end(), IsHostChar)) return bad("has a malformed host");
    out.host = Lower(host);
  }
  if (has_port) {
    std::optional<std::uint16_t> port = ParsePort(port_text);
    if (!port) return bad("has a bad port");
    out.port = *port;
  } else {
    std::optional<std::uint16_t> port = DefaultPort(out.scheme);
    if (!port) return bad("names no port and its scheme has no default");
    out.port = *port;
  }
  if (target.empty()) {
    out.target = "/";
  } else if (target.front() == '?') {
    out.target = "/" + std::string(target);
  } else {
    out.target = std::string(target);
  }
  return out;
}

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  if (text.empty() || text.size() > 63) return std::nullopt;
  const std::string s(text);
  IpAddress ip;
  if (s.find(':') != std::string::npos) {
    if (::inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) != 1) return std::nullopt;
    ip.v6 = true;
    return ip;
  }
  if (::inet_pton(AF_INET, s.c_str(), ip.bytes.data()) != 1) return std::nullopt;
  return ip;
}

std::string IpAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof(text)) == nullptr) return "?";
  return text;
}

AddressClass ClassOf(const IpAddress& address) {
  const auto& b = address.bytes;
  if (!address.v6) return ClassOfV4(b.data());
  const bool zero80 = std::all_of(b.begin(), b.begin() + 10, [](std::uint8_t x) { return x == 0; });
  if (zero80 && b[10] == 0xff && b[11] == 0xff) return ClassOfV4(b.data() + 12);  // ::ffff:a.b.c.d
  static constexpr std::array<std::uint8_t, 12> kNat64 = {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::equal(kNat64.begin(), kNat64.end(), b.begin())) return ClassOfV4(b.data() + 12);
  if (zero80 && b[10] == 0 && b[11] == 0) {
    const bool first15_zero = std::all_of(b.begin(), b.begin() + 15, [](std::uint8_t x) { return x == 0; });
    if (first15_zero && b[15] == 1) return AddressClass::kLoopback;  // ::1
    return AddressClass::kReserved;  // :: and the deprecated IPv4-compatible ::a.b.c.d
  }
  if (b[0] == 0xff) return AddressClass::kReserved;                       // multicast
  if ((b[0] & 0xfe) == 0xfc) return AddressClass::kPrivate;               // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::kPrivate;  // fe80::/10 link-local
  return AddressClass::kPublic;
}

FetchPolicy::FetchPolicy() : schemes_{"http"}, schemes_text_("http"), allow_text_("public") {
  Rule rule;
  rule.kind = Rule::Kind::kClass;
  rule.address_class = AddressClass::kPublic;
  rules_.push_back(rule);
}

Result<FetchPolicy::Rule> FetchPolicy::ParseRule(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("fetch rule '" + std::string(text) + "': " + std::string(why));
  };
  Rule rule;
  std::string_view body = text;
  // The optional ":PORT": after the closing bracket (or the prefix after it) of an IPv6 rule, else
  // after the one colon the rule may have.
  std::string_view port_text;
  bool has_port = false;
  if (!body.empty() && body.front() == '[') {
    const std::size_t close = body.find(']');
    if (close == std::string_view::npos) return bad("unterminated '['");
    const std::size_t colon = body.find(':', close);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = body.substr(colon + 1);
      body = body.substr(0, colon);
    }
  } else if (const std::size_t colon = body.find(':'); colon != std::string_view::npos) {
    has_port = true;
    port_text = body.substr(colon + 1);
    body = body.substr(0, colon);
  }
  if (has_port) {
    rule.port = ParsePort(port_text);
    if (!rule.port) return bad("bad port");
  }
  const std::string lower = Lower(body);
  if (lower == "public" || lower == "private" || lower == "loopback") {
    rule.kind = Rule::Kind::kClass;
    rule.address_class = lower == "public" ? AddressClass::kPublic
                         : lower == "private" ? AddressClass::kPrivate
                                              : AddressClass::kLoopback;
    return rule;
  }
  // An address block: "a.b.c.d[/n]" or "[v6][/n]".
  std::string_view address = body;
  std::string_view prefix_text;
  const std::size_t slash = body.find('/');
  if (slash != std::string_view::npos) {
    address = body.substr(0, slash);
    prefix_text = body.substr(slash + 1);
  }
  if (!address.empty() && address.front() == '[') {
    if (address.back() != ']' || address.size() < 3) return bad("malformed IPv6 block");
    address = address.substr(1, address.size() - 2);
    std::optional<IpAddress> ip = IpAddress::Parse(address);
    if (!ip || !ip->v6) return bad("malformed IPv6 address");
    rule.block = *ip;
  } else if (std::optional<IpAddress> ip = IpAddress::Parse(address); ip && !ip->v6) {
    rule.block = *ip;
  } else if (slash != std::string_view::npos) {
    return bad("an address block needs an IPv4 address or a bracketed IPv6 one");
  } else {
    // A host name, or "*." and a domain.
    std::string_view name = body;
    rule.kind = Rule::Kind::kName;
    if (name.starts_with("*.")) {
      rule.kind = Rule::Kind::kSuffix;
      name.remove_prefix(1);  // keep the dot: ".example.org"
    }
    const std::string_view chars = rule.kind == Rule::Kind::kSuffix ? name.substr(1) : name;
    if (chars.empty() || chars.size() > 253 || !std::all_of(chars.begin(), chars.end(), IsHostChar) ||
        chars.find('*') != std::string_view::npos) {
      return bad("not a class (public, private, loopback), an address block or a host name");
    }
    rule.name = Lower(name);
    return rule;
  }
  rule.kind = Rule::Kind::kBlock;
  const int bits = rule.block.v6 ? 128 : 32;
  rule.prefix = bits;
  if (slash != std::string_view::npos) {
    int prefix = -1;
    auto [end, ec] = std::from_chars(prefix_text.data(), prefix_text.data() + prefix_text.size(), prefix);
    if (prefix_text.empty() || ec != std::errc() || end != prefix_text.data() + prefix_text.size() || prefix < 0 ||
        prefix > bits) {
      return bad("bad prefix length");
    }
    rule.prefix = prefix;
  }
  return rule;
}

Result<FetchPolicy> FetchPolicy::Make(std::string_view schemes, std::string_view allow, std::uint64_t max_bytes,
                                      int max_redirects) {
  FetchPolicy policy;
  policy.schemes_.clear();
  policy.rules_.clear();
  for (std::string_view item : SplitList(schemes)) {
    const std::string scheme = Lower(item);
    if (scheme != "http") {
      return Status::InvalidArgument("fetch scheme '" + std::string(item) + "': this build fetches over http only");
    }
    if (std::find(policy.schemes_.begin(), policy.schemes_.end(), scheme) == policy.schemes_.end()) {
      policy.schemes_.push_back(scheme);
    }
  }
  if (policy.schemes_.empty()) return Status::InvalidArgument("fetch schemes: the list is empty");
  std::vector<std::string> rule_texts;
  for (std::string_view item : SplitList(allow)) {
    POLNODE_ASSIGN_OR_RETURN(Rule rule, ParseRule(item));
    policy.rules_.push_back(std::move(rule));
    rule_texts.emplace_back(item);
  }
  if (policy.rules_.empty()) return Status::InvalidArgument("fetch allow: the list is empty (nothing could be fetched)");
  if (max_bytes < 1 || max_bytes > kMaxMaxBytes) {
    return Status::InvalidArgument("fetch max_bytes must be in [1, " + std::to_string(kMaxMaxBytes) + "]");
  }
  if (max_redirects < 0 || max_redirects > kMaxMaxRedirects) {
    return Status::InvalidArgument("fetch max_redirects must be in [0, " + std::to_string(kMaxMaxRedirects) + "]");
  }
  policy.max_bytes_ = max_bytes;
  policy.max_redirects_ = max_redirects;
  policy.schemes_text_.clear();
  for (const std::string& s : policy.schemes_) policy.schemes_text_ += (policy.schemes_text_.empty() ? "" : ",") + s;
  policy.allow_text_.clear();
  for (const std::string& r : rule_texts) policy.allow_text_ += (policy.allow_text_.empty() ? "" : ",") + r;
  return policy;
}

Result<FetchPolicy> FetchPolicy::Load(const std::string& path) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxConfigBytes);
  if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) return FetchPolicy();
  if (!bytes.ok()) return bytes.status();
  POLNODE_ASSIGN_OR_RETURN(TomlTable table,
                           ParseToml(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size())));
  const FetchPolicy defaults;
  std::string schemes = defaults.schemes_text_;
  std::string allow = defaults.allow_text_;
  std::int64_t max_bytes = static_cast<std::int64_t>(defaults.max_bytes_);
  std::int64_t max_redirects = defaults.max_redirects_;
  for (const auto& setting : table) {
    // Named references, not a structured binding: clang 14 (the fuzz build) cannot capture one.
    const std::string& key = setting.first;
    const auto& value = setting.second;
    const auto fail = [&](std::string_view why) {
      return Status::InvalidArgument(path + ": " + key + " " + std::string(why));
    };
    if (key == "fetch.schemes" || key == "fetch.allow") {
      if (!std::holds_alternative<std::string>(value)) return fail("must be a string");
      (key == "fetch.schemes" ? schemes : allow) = std::get<std::string>(value);
    } else if (key == "fetch.max_bytes" || key == "fetch.max_redirects") {
      if (!std::holds_alternative<std::int64_t>(value)) return fail("must be an integer");
      const std::int64_t v = std::get<std::int64_t>(value);
      if (v < 0) return fail("must not be negative");
      (key == "fetch.max_bytes" ? max_bytes : max_redirects) = v;
    } else {
      return Status::InvalidArgument(path + ": unknown setting '" + key + "'");
    }
  }
  // Clamped only so the cast below cannot wrap; Make still refuses it, naming the range.
  max_redirects = std::min<std::int64_t>(max_redirects, kMaxMaxRedirects + 1);
  Result<FetchPolicy> policy = Make(schemes, allow, static_cast<std::uint64_t>(max_bytes), static_cast<int>(max_redirects));
  if (!policy.ok()) return policy.status().WithContext(path);
  return policy;
}

std::string FetchPolicy::ConfigText() const {
  std::ostringstream out;
  out << "# polnode role daemon settings\n\n"
      << "[fetch]\n"
      << "# what this daemon fetches from the URIs on the ledger (task documents, proofs)\n"
      << "# schemes: only http in this build\n"
      << "schemes = \"" << schemes_text_ << "\"\n"
      << "# comma-separated: public, private, loopback, an address block (10.0.0.0/8, [fd00::]/8),\n"
      << "# a host name or *.domain; any of them with :PORT for that port only\n"
      << "allow = \"" << allow_text_ << "\"\n"
      << "# largest body one fetch accepts, in bytes (checked as it streams in)\n"
      << "max_bytes = " << max_bytes_ << "\n"
      << "# redirects followed per fetch; each target must pass the rules above\n"
      << "max_redirects = " << max_redirects_ << "\n";
  return out.str();
}

Status FetchPolicy::CheckScheme(const FetchUri& uri) const {
  if (std::find(schemes_.begin(), schemes_.end(), uri.scheme) != schemes_.end()) return Status::Ok();
  return Status::PermissionDenied("the fetch policy refuses scheme '" + uri.scheme + "' (fetch.schemes = \"" +
                                  schemes_text_ + "\")");
}

bool FetchPolicy::AllowsAddress(const FetchUri& uri, const IpAddress& address) const {
  const AddressClass address_class = ClassOf(address);
  for (const Rule& rule : rules_) {
    if (rule.port && *rule.port != uri.port) continue;
    switch (rule.kind) {
      case Rule::Kind::kClass:
        if (rule.address_class == address_class) return true;
        break;
      case Rule::Kind::kBlock:
        if (rule.block.v6 == address.v6 && SamePrefix(rule.block, address, rule.prefix)) return true;
        break;
      case Rule::Kind::kName:
        if (uri.host == rule.name) return true;
        break;
      case Rule::Kind::kSuffix:
        if (uri.host.size() > rule.name.size() && uri.host.ends_with(rule.name)) return true;
        break;
    }
  }
  return false;
}

std::string IpAddress::Describe() const { return ToString() + " (" + std::string(ClassName(ClassOf(*this))) + ")"; }

}  // namespace polnode::node
