#include <ostream>

#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/consensus/keys.h"
#include "polnode/rpc/json.h"

namespace polnode::node {

int RunKeygenCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags("polnode keygen",
                "Create a new secp256k1 key, write it to a key file readable only by you (mode 0600), "
                "and print its BIP-340 x-only public key.");
  flags.Value("out", "FILE",
              "where to write the key; never overwrites an existing file "
              "(default: key-<first 16 hex digits of the public key>.key in the current directory)");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;

  Result<consensus::SecretKey> key = consensus::SecretKey::Generate();
  if (!key.ok()) return ReportError(io, "polnode keygen", key.status());
  std::string pubkey = consensus::ToHex(key->PublicKey().bytes());
  std::string path = flags.Given("out") ? flags.Get("out") : "key-" + pubkey.substr(0, 16) + ".key";
  if (Status s = consensus::WriteKeyFile(path, *key); !s.ok()) {
    return ReportError(io, "polnode keygen", s);
  }
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject().Field("pubkey", pubkey).Field("key_file", path).EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << "public key: " << pubkey << "\nkey file:   " << path << " (mode 0600; keep it private)\n";
  }
  return kExitOk;
}

}  // namespace polnode::node
