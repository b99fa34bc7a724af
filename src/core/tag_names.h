// Names for NCCL 2.31's user tags (profiler v7 `userTag`), supplied by the user so that dumps, traces and
// per-tag metrics say "forward" rather than 0x0000000000000001: NCCLSCOPE_TAG_NAMES is VALUE=NAME pairs,
// comma-separated, or @FILE with one pair per line ('#' starts a comment). VALUE is decimal or 0x hex, 1 up
// to 2^63 - 1 (NCCL reserves the values with the top bit set); NAME is 1 to 64 of [A-Za-z0-9_.:/-]. A bad
// pair is skipped with a warning naming it; the others are kept. Parsed once, at the first lookup;
// thread-safe afterwards (read-only).
#ifndef NCCLSCOPE_CORE_TAG_NAMES_H_
#define NCCLSCOPE_CORE_TAG_NAMES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace ncclscope {

using TagNameMap = std::map<uint64_t, std::string>;

// Parses `text` (the parameter's value; "@path" reads the file); each problem goes to `warn`, once.
TagNameMap ParseTagNames(const std::string& text, const std::function<void(const std::string&)>& warn);

// The name NCCLSCOPE_TAG_NAMES gives `tag`, or "" when it names none.
const std::string& TagName(uint64_t tag);

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_TAG_NAMES_H_
