#include "exporters/http/bcrypt_hash.h"

#include <cctype>
#include <string>

namespace ncclscope {
namespace {

constexpr std::string_view kBcryptAlphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view kHowToMake = "make one with `htpasswd -nbBC 10 user password`";

// Checks `field` (the salt or the hash part of a bcrypt hash): every character from bcrypt's alphabet, and
// the last one a multiple of `last_step` in it (its low bits are padding that bcrypt never sets).
Status CheckBcryptField(std::string_view field, const char* name, size_t last_step) {
  for (size_t i = 0; i < field.size(); ++i) {
    const size_t v = kBcryptAlphabet.find(field[i]);
    if (v == std::string_view::npos) {
      return InvalidUsage(std::string("not a bcrypt hash: character ") + std::to_string(i + 1) + " of the " + name +
                          " is not in bcrypt's alphabet (./A-Za-z0-9)");
    }
    if (i + 1 == field.size() && v % last_step != 0) {
      return InvalidUsage(std::string("not a bcrypt hash: the last character of the ") + name +
                          " sets padding bits bcrypt never sets (it was not made by bcrypt, or was edited), so no "
                          "password would match; " + std::string(kHowToMake));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateBcryptHash(std::string_view hash) {
  // $2b$10$ + 22 characters of salt + 31 of hash.
  constexpr size_t kSetting = 7, kSalt = 22, kDigest = 31, kLength = kSetting + kSalt + kDigest;
  if (hash.size() != kLength) {
    return InvalidUsage("not a bcrypt hash: " + std::to_string(hash.size()) + " characters, not 60 ($2b$10$, 22 "
                        "characters of salt, 31 of hash; " + std::string(kHowToMake) + ")");
  }
  const bool prefix = hash[0] == '$' && hash[1] == '2' && (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') &&
                      hash[3] == '$' && hash[6] == '$';
  if (!prefix) {
    return InvalidUsage("not a bcrypt hash: it must start with $2a$, $2b$ or $2y$ and a two-digit cost ($2b$10$); " +
                        std::string(kHowToMake));
  }
  const bool digits = std::isdigit(static_cast<unsigned char>(hash[4])) && std::isdigit(static_cast<unsigned char>(hash[5]));
  const int cost = digits ? (hash[4] - '0') * 10 + (hash[5] - '0') : 0;
  if (cost < 4 || cost > 31) {
    return InvalidUsage("not a bcrypt hash: the cost \"" + std::string(hash.substr(4, 2)) + "\" is not 04-31");
  }
  // The salt is 16 bytes in 22 characters (4 bits of padding), the hash 23 bytes in 31 (2 bits).
  NCCLSCOPE_RETURN_IF_ERROR(CheckBcryptField(hash.substr(kSetting, kSalt), "salt", 16));
  return CheckBcryptField(hash.substr(kSetting + kSalt), "hash", 4);
}

bool BcryptCanCheck(std::string_view password) {
  return password.size() <= kBcryptMaxPasswordBytes && password.find('\0') == std::string_view::npos;
}

}  // namespace ncclscope
