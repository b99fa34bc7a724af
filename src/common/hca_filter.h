// The NCCL_IB_HCA selection syntax, as NCCL parses it (src/misc/utils.cc, parseStringList/matchIfList):
//   [^][=]entry[,entry...]      entry = dev[:port[:rail[:plane]]]
// - dev is a name prefix ("mlx5" selects mlx5_0, mlx5_1, ...); a leading '=' on the whole list makes
//   every name exact. A leading '^' (before any '=') turns the list into an exclusion list.
// - port, rail and plane are decimal; an absent or empty field means "any port" / "no rail" / "no
//   plane" (-1), so "mlx5_0::3" is every port of mlx5_0 on rail 3.
// - The first entry that matches a (device, port) wins and supplies its rail and plane ids, which the
//   v12 properties report (railId/planeId). An excluded list never assigns rails or planes.
// - Empty entries ("a,,b") are skipped as NCCL does. Anything NCCL would silently misread (a
//   non-numeric or out-of-range number, a fifth field, a missing name, a bare "^") makes the whole
//   value invalid: Parse warns and returns the default filter (every device and port), which is how
//   every other ncclscope tunable treats a bad value.
// NCCLSCOPE_IB_HCA takes precedence over NCCL_IB_HCA; that choice happens in params (kIbHca). The verbs transport
// selects its devices with it; host_nics/rank_nics.h reads NCCL_IB_HCA and NCCL_SOCKET_IFNAME (the same form, without
// ports) with it to infer the NICs NCCL's own transports use.
// Value type; immutable after Parse, safe to share between threads.
#ifndef NCCLSCOPE_COMMON_HCA_FILTER_H_
#define NCCLSCOPE_COMMON_HCA_FILTER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscope {

struct HcaEntry {
  std::string name;
  int port = -1;   // -1: any port
  int rail = -1;   // -1: NCCL_NET_ID_UNDEF
  int plane = -1;  // -1: NCCL_NET_ID_UNDEF
};

// What a selected (device, port) takes from the entry that selected it.
struct HcaMatch {
  int rail = -1;
  int plane = -1;
  int entry = -1;  // index of the matching entry; -1 when selected by default or by exclusion
};

class HcaFilter {
 public:
  HcaFilter() = default;  // selects everything

  // Parses `spec` (the variable's value). On bad syntax returns the default filter and, when `error`
  // is non-null, stores the reason there; `variable` names the source in the logged warning.
  static HcaFilter Parse(std::string_view spec, std::string* error = nullptr,
                         std::string_view variable = "NCCLSCOPE_IB_HCA");

  // The rail and plane for (device, port), or nullopt when the filter does not select it.
  std::optional<HcaMatch> Match(std::string_view device, int port) const;

  // True when the filter can select (device, some port): used to skip opening unselected devices.
  bool MaySelectDevice(std::string_view device) const;

  bool selects_all() const { return entries_.empty() && !exclude_; }
  bool exclude() const { return exclude_; }
  bool exact() const { return exact_; }
  const std::vector<HcaEntry>& entries() const { return entries_; }

 private:
  bool NameMatches(std::string_view device, const HcaEntry& e) const;

  bool exclude_ = false;
  bool exact_ = false;
  std::vector<HcaEntry> entries_;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_HCA_FILTER_H_
