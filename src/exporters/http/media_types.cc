#include "exporters/http/media_types.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace ncclscope {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool SameText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// One list entry "value;param=x;q=0.5": its value and q (1 without one; -1 when q is malformed).
struct Entry {
  std::string_view value;
  double q = 1;
};

Entry ParseEntry(std::string_view item) {
  Entry e;
  size_t semi = item.find(';');
  e.value = Trim(item.substr(0, semi));
  while (semi != std::string_view::npos) {
    item.remove_prefix(semi + 1);
    semi = item.find(';');
    const std::string_view param = Trim(item.substr(0, semi));
    if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      const std::string text(param.substr(2));
      char* end = nullptr;
      const double q = std::strtod(text.c_str(), &end);
      e.q = end != text.c_str() && *end == '\0' && q >= 0 && q <= 1 ? q : -1;
    }
  }
  return e;
}

// Calls f(entry) for each comma-separated entry.
template <typename F>
void ForEachEntry(std::string_view list, F f) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = Trim(list.substr(0, comma));
    if (!item.empty()) f(ParseEntry(item));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

double MediaTypeQuality(std::string_view accept, std::string_view type) {
  if (Trim(accept).empty()) return 1;
  const std::string_view major = type.substr(0, type.find('/'));
  int best_rank = -1;  // 2: the type, 1: major/*, 0: */*
  double best_q = 0;
  ForEachEntry(accept, [&](const Entry& e) {
    if (e.q < 0) return;
    int rank = -1;
    if (SameText(e.value, type)) rank = 2;
    else if (e.value.size() == major.size() + 2 && SameText(e.value.substr(0, major.size()), major) &&
             e.value.substr(major.size()) == "/*") rank = 1;
    else if (e.value == "*/*") rank = 0;
    if (rank > best_rank || (rank == best_rank && rank >= 0 && e.q > best_q)) {
      best_rank = rank;
      best_q = e.q;
    }
  });
  return best_rank < 0 ? 0 : best_q;
}

bool AcceptsGzip(std::string_view accept_encoding) {
  double gzip = -1, any = -1;
  ForEachEntry(accept_encoding, [&](const Entry& e) {
    if (e.q < 0) return;
    if (SameText(e.value, "gzip") || SameText(e.value, "x-gzip")) gzip = std::max(gzip, e.q);
    else if (e.value == "*") any = std::max(any, e.q);
  });
  return gzip >= 0 ? gzip > 0 : any > 0;
}

bool ListsToken(std::string_view list, std::string_view token) {
  bool listed = false;
  ForEachEntry(list, [&](const Entry& e) { listed = listed || SameText(e.value, token); });
  return listed;
}

}  // namespace ncclscope
