// What a daemon may fetch from the URIs the ledger names (a task's spec_uri, a proof's proof_uri).
// Anyone can post a URI on chain, so without a policy a verifier or solver would GET whatever
// address a submitter or solver chose: the cloud metadata service, an admin page on the
// operator's private network, a gigabyte stream. The policy decides, before any byte is sent:
//
//   * the scheme (only "http" today: the client has no TLS);
//   * the address the connection goes to. Rules are checked against every address the host name
//     resolves to (so "127.1", a DNS name pointing at 10.0.0.5 or an IPv4-mapped IPv6 literal gain
//     nothing), and the client connects only to the addresses a rule allows;
//   * the size of one answer's body, enforced as it streams in (never after buffering it);
//   * redirects: at most max_redirects, each target checked like the first URI.
//
// Rules (the comma-separated fetch.allow; each may end in ":PORT" to allow that port only):
//   public                  any address in no class below (the default: the open internet)
//   private                 10/8, 172.16/12, 192.168/16, 100.64/10, 169.254/16, fc00::/7, fe80::/10
//   loopback                127/8, ::1
//   10.1.0.0/16, [fd00::]/8 an address block (a bare address is a block of one)
//   proofs.example.org      a host name as written in the URI; "*.example.org" for its subdomains.
//                           A name rule trusts the name: it allows whatever the name resolves to.
// Addresses in no class (0/8, multicast, 240/4, ::, IPv4-compatible ::/96) are allowed only by an
// address block that names them.
#ifndef POLNODE_RPC_FETCH_POLICY_H_
#define POLNODE_RPC_FETCH_POLICY_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::node {

/// A URI the fetch client can follow: scheme "://" host [":" port] [path-and-query].
struct FetchUri {
  std::string scheme;      // lower case
  std::string host;        // lower case; an IPv6 literal without its brackets
  std::uint16_t port = 0;  // as written, else the scheme's default (http: 80)
  std::string target;      // "/" when the URI has none; otherwise as written, starting with '/'

  /// scheme "://" host ":" port, the host bracketed when it is an IPv6 literal.
  std::string Origin() const;
};

/// Parses `uri` strictly: a scheme of [a-z0-9+.-] (letters case-insensitive), no user info ('@'),
/// a host of [A-Za-z0-9._-] or a bracketed IPv6 literal without zone, a port in 1..65535, no
/// fragment, no whitespace or control bytes, at most 4096 bytes. kInvalidArgument naming the problem.
[[nodiscard]] Result<FetchUri> ParseFetchUri(std::string_view uri);

/// An IPv4 or IPv6 address as bytes (IPv4 in the first four).
struct IpAddress {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};

  /// Dotted IPv4 or textual IPv6 (inet_pton's forms); nullopt otherwise.
  static std::optional<IpAddress> Parse(std::string_view text);
  std::string ToString() const;
  /// ToString() and its class in parentheses, e.g. "10.0.0.5 (private)", for error messages.
  std::string Describe() const;
};

/// The class of an address for "public", "private" and "loopback" rules (see the top of this file).
/// IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses take their IPv4 address's class.
enum class AddressClass { kPublic, kPrivate, kLoopback, kReserved };
AddressClass ClassOf(const IpAddress& address);

/// The policy; immutable once made, so one instance may be shared by every thread of a daemon.
class FetchPolicy {
 public:
  static constexpr std::uint64_t kDefaultMaxBytes = std::uint64_t{64} << 20;
  static constexpr std::uint64_t kMaxMaxBytes = std::uint64_t{4} << 30;  // a checkpoint blob's cap
  static constexpr int kDefaultMaxRedirects = 2;
  static constexpr int kMaxMaxRedirects = 10;

  /// The default: http to public addresses, 64 MiB a fetch, 2 redirects.
  FetchPolicy();

  /// A policy from the config values: `schemes` and `allow` comma-separated (spaces around items
  /// ignored), `max_bytes` in [1, kMaxMaxBytes], `max_redirects` in [0, kMaxMaxRedirects].
  /// kInvalidArgument naming the bad item (an unsupported scheme, a rule that parses as none of
  /// the forms above, an empty list).
  [[nodiscard]] static Result<FetchPolicy> Make(std::string_view schemes, std::string_view allow, std::uint64_t max_bytes,
                                                int max_redirects);

  /// The [fetch] section of a role home's role.toml (kRoleConfigFile): keys schemes, allow,
  /// max_bytes, max_redirects, each optional. A missing file is the default policy; any other key
  /// or section, a value of the wrong type or Make's errors are kInvalidArgument naming the key.
  [[nodiscard]] static Result<FetchPolicy> Load(const std::string& path);

  /// The role.toml text for this policy, every key with a comment (what the devnet writes).
  std::string ConfigText() const;

  /// kPermissionDenied when `uri`'s scheme is not allowed.
  [[nodiscard]] Status CheckScheme(const FetchUri& uri) const;
  /// Whether the client may connect to `address` to fetch `uri` (its scheme already checked).
  bool AllowsAddress(const FetchUri& uri, const IpAddress& address) const;

  std::uint64_t max_bytes() const { return max_bytes_; }
  int max_redirects() const { return max_redirects_; }
  /// The rules as configured, comma-separated (for error messages).
  const std::string& allow_text() const { return allow_text_; }

 private:
  struct Rule {
    enum class Kind { kClass, kBlock, kName, kSuffix } kind = Kind::kClass;
    AddressClass address_class = AddressClass::kPublic;  // kClass
    IpAddress block;                                     // kBlock: the network...
    int prefix = 0;                                      // ...and its prefix length
    std::string name;                                    // kName: the host; kSuffix: ".example.org"
    std::optional<std::uint16_t> port;                   // unset: any port
  };
  [[nodiscard]] static Result<Rule> ParseRule(std::string_view text);

  std::vector<std::string> schemes_;
  std::vector<Rule> rules_;
  std::string schemes_text_;
  std::string allow_text_;
  std::uint64_t max_bytes_ = kDefaultMaxBytes;
  int max_redirects_ = kDefaultMaxRedirects;
};

/// The role home file holding a role daemon's settings ([fetch] for now); optional.
inline constexpr char kRoleConfigFile[] = "role.toml";

}  // namespace polnode::node

#endif  // POLNODE_RPC_FETCH_POLICY_H_
