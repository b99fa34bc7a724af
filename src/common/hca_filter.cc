#include "common/hca_filter.h"

#include <charconv>

#include "common/log.h"

namespace ncclscope {
namespace {

// Debian's abseil has its own string_view type; a plain splitter keeps this file std-only.
std::vector<std::string_view> Split(std::string_view text, char sep, bool skip_empty) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    std::string_view piece = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!skip_empty || !piece.empty()) out.push_back(piece);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

// An absent or empty field is -1; otherwise a decimal number in [min, max]. NCCL's atoi would turn
// "x" into 0 (port 0 matches nothing, rail 0 is a real rail): we refuse instead.
bool ParseField(std::string_view text, int min, int max, int* out) {
  if (text.empty()) {
    *out = -1;
    return true;
  }
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

bool ParseEntry(std::string_view item, HcaEntry* entry, std::string* why) {
  std::vector<std::string_view> fields = Split(item, ':', false);
  if (fields.size() > 4) {
    *why = "'" + std::string(item) + "' has more than dev:port:rail:plane";
    return false;
  }
  if (fields[0].empty()) {
    *why = "'" + std::string(item) + "' has no device name";
    return false;
  }
  entry->name = std::string(fields[0]);
  // Ports are uint8 in verbs; rail and plane travel as int16 in the v12 properties.
  struct Field { const char* what; int min; int max; int* out; };
  const Field specs[] = {{"port", 1, 255, &entry->port},
                         {"rail", 0, 32767, &entry->rail},
                         {"plane", 0, 32767, &entry->plane}};
  for (size_t i = 1; i < fields.size(); ++i) {
    const Field& f = specs[i - 1];
    if (!ParseField(fields[i], f.min, f.max, f.out)) {
      *why = "'" + std::string(item) + "': " + f.what + " '" + std::string(fields[i]) + "' is not a number in [" +
             std::to_string(f.min) + ", " + std::to_string(f.max) + "]";
      return false;
    }
  }
  return true;
}

}  // namespace

HcaFilter HcaFilter::Parse(std::string_view spec, std::string* error, std::string_view variable) {
  HcaFilter f;
  if (spec.empty()) return f;
  std::string_view rest = spec;
  // NCCL strips '^' first, then '='; "=^x" therefore names a device starting with '^'.
  if (rest.front() == '^') {
    f.exclude_ = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    f.exact_ = true;
    rest.remove_prefix(1);
  }
  std::string why;
  for (std::string_view item : Split(rest, ',', true)) {
    HcaEntry entry;
    if (!ParseEntry(item, &entry, &why)) break;
    f.entries_.push_back(std::move(entry));
  }
  if (why.empty() && f.entries_.empty()) why = "names no device";
  if (!why.empty()) {
    NCCLSCOPE_WARN(subsys::kEnv | subsys::kNet, "%.*s='%.*s': %s; using every device and port",
                   static_cast<int>(variable.size()), variable.data(), static_cast<int>(spec.size()), spec.data(),
                   why.c_str());
    if (error != nullptr) *error = why;
    return HcaFilter();
  }
  return f;
}

bool HcaFilter::NameMatches(std::string_view device, const HcaEntry& e) const {
  return exact_ ? device == e.name : device.substr(0, e.name.size()) == e.name;
}

std::optional<HcaMatch> HcaFilter::Match(std::string_view device, int port) const {
  if (entries_.empty()) {
    if (exclude_) return std::nullopt;  // unreachable through Parse; a default filter never excludes
    return HcaMatch{};
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    const HcaEntry& e = entries_[i];
    if (!NameMatches(device, e)) continue;
    if (e.port != -1 && port != -1 && e.port != port) continue;
    if (exclude_) return std::nullopt;
    return HcaMatch{e.rail, e.plane, static_cast<int>(i)};
  }
  if (exclude_) return HcaMatch{};
  return std::nullopt;
}

bool HcaFilter::MaySelectDevice(std::string_view device) const {
  if (entries_.empty() || exclude_) return true;  // an exclusion may spare some of its ports
  for (const HcaEntry& e : entries_) {
    if (NameMatches(device, e)) return true;
  }
  return false;
}

}  // namespace ncclscope
