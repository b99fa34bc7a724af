// The shape of a bcrypt hash and the passwords bcrypt can check, apart from basic_auth.cc (which loads
// libcrypt) so that the web config reader and its fuzz target use them alone. Pure functions.
#ifndef NCCLSCOPE_EXPORTERS_HTTP_BCRYPT_HASH_H_
#define NCCLSCOPE_EXPORTERS_HTTP_BCRYPT_HASH_H_

#include <cstddef>
#include <string_view>

#include "common/status.h"

namespace ncclscope {

// Ok when `hash` is a bcrypt hash libcrypt can match: $2a$, $2b$ or $2y$, a cost of 04-31, '$', 22 salt and 31
// hash characters of bcrypt's alphabet (./A-Za-z0-9), the last of each carrying only the bits bcrypt uses (the
// salt is 128 bits in 132, the hash 184 in 186). A hash that fails this loads but matches no password: libcrypt
// re-encodes the salt canonically, so every login to its user would fail. Otherwise InvalidUsage, saying what is
// wrong without repeating the hash, e.g. "not a bcrypt hash: 59 characters, not 60 ($2b$10$, 22 characters of
// salt, 31 of hash; make one with `htpasswd -nbBC 10 user password`)".
Status ValidateBcryptHash(std::string_view hash);

// Whether basic auth can check `password` at all: bcrypt reads a C string and only its first 72 bytes, so a
// password holding a NUL or longer than 72 bytes would match on a prefix; both are refused without a hash (Go's
// bcrypt, under Prometheus' exporter-toolkit, refuses to hash passwords over 72 bytes too).
constexpr size_t kBcryptMaxPasswordBytes = 72;
bool BcryptCanCheck(std::string_view password);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_HTTP_BCRYPT_HASH_H_
