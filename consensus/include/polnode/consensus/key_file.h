// Secret key files.
//
// Format: the 32-byte secret key as 64 lowercase hex characters followed by one "\n"; nothing
// else. Reading also accepts uppercase hex and a missing final newline (hand-edited files).
//
// A key file is private to its owner: it is created with mode 0600 and a file that grants any
// permission to group or others is refused, the way ssh refuses such private keys, because
// another user who can read it can sign as this node (and one who can write it can swap it).
#ifndef POLNODE_CONSENSUS_KEY_FILE_H_
#define POLNODE_CONSENSUS_KEY_FILE_H_

#include <string>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"

namespace polnode::consensus {

/// Writes `key` to a new file at `path` with mode 0600. The file appears complete or not at all:
/// the key is written and fsynced to a temporary file (created with O_EXCL, mode 0600) in the
/// same directory, which is then hard-linked to `path` and removed; the directory is fsynced.
/// An existing file at `path` is never replaced: kAlreadyExists. Other failures are kIOError or
/// kPermissionDenied with the operating system's reason; no temporary file is left behind.
[[nodiscard]] Status WriteKeyFile(const std::string& path, const SecretKey& key);

/// Reads a key file written by WriteKeyFile. Errors:
///   kNotFound          no file at `path`
///   kPermissionDenied  the file grants any permission to group or others (the message tells
///                      the user to `chmod 600` it), or the OS denies reading it
///   kInvalidArgument   `path` is not a regular file
///   kCorruption        the contents are not a key in the format above (wrong length, non-hex
///                      characters, or a value that is not a valid secret key)
///   kIOError           the read itself failed
Result<SecretKey> ReadKeyFile(const std::string& path);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_KEY_FILE_H_
