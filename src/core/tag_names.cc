#include "core/tag_names.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/config_file.h"
#include "common/log.h"
#include "common/params.h"

namespace ncclscope {
namespace {

constexpr size_t kMaxNameLength = 64;
// A name file of 1 MiB holds about 15,000 names, far more than a job tags.
constexpr size_t kMaxNameFileBytes = 1 << 20;
constexpr size_t kMaxWarnings = 10;

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == ':' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// "VALUE=NAME" into the map, or a reason it was not.
std::string AddPair(const std::string& pair, TagNameMap* out) {
  const size_t eq = pair.find('=');
  if (eq == std::string::npos) return "want VALUE=NAME";
  const absl::string_view whole = pair;
  const std::string value(absl::StripAsciiWhitespace(whole.substr(0, eq)));
  const std::string name(absl::StripAsciiWhitespace(whole.substr(eq + 1)));
  int64_t v = 0;
  if (!ParseInt(value.c_str(), &v) || v <= 0) {
    return "VALUE must be an integer from 1 to 2^63-1, decimal or 0x hex (0 is untagged; NCCL reserves the top bit)";
  }
  if (!ValidName(name)) return "NAME must be 1 to 64 of A-Z a-z 0-9 _ . : / -";
  if (out->count(v) != 0) return "tag given twice (the first name is kept)";
  (*out)[v] = name;
  return "";
}

}  // namespace

TagNameMap ParseTagNames(const std::string& text, const std::function<void(const std::string&)>& warn) {
  TagNameMap out;
  std::vector<std::string> pairs;
  if (!text.empty() && text[0] == '@') {
    const Result<std::string> file = ReadConfigFile("tag-name file", text.substr(1), {kMaxNameFileBytes});
    if (!file.ok()) {
      warn(file.status().message() + ": no tag names");
      return out;
    }
    for (absl::string_view line : absl::StrSplit(*file, '\n')) {
      const absl::string_view pair = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
      if (!pair.empty()) pairs.emplace_back(pair);
    }
  } else {
    for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
      pairs.emplace_back(absl::StripAsciiWhitespace(item));
    }
  }
  size_t skipped = 0;
  for (const std::string& pair : pairs) {
    const std::string why = AddPair(pair, &out);
    if (why.empty()) continue;
    // A file of junk must not flood the job's log: the first few are named, the rest counted.
    if (++skipped <= kMaxWarnings) warn("tag name '" + Printable(pair, 80) + "' skipped: " + why);
  }
  if (skipped > kMaxWarnings) warn(std::to_string(skipped - kMaxWarnings) + " more bad tag names skipped");
  return out;
}

const std::string& TagName(uint64_t tag) {
  static const TagNameMap* names = new TagNameMap(  // never destroyed: read at exit by the last exporters
      ParseTagNames(Params().Str(ParamId::kTagNames), [](const std::string& msg) {
        NCCLSCOPE_WARN(subsys::kEnv, "NCCLSCOPE_TAG_NAMES: %s", msg.c_str());
      }));
  static const std::string kNone;
  auto it = names->find(tag);
  return it == names->end() ? kNone : it->second;
}

}  // namespace ncclscope
