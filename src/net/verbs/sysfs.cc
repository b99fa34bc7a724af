// The sysfs half of devices.h: plain file reads, so tests can run them over a fake tree.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdio>

#include "net/verbs/devices.h"

namespace ncclscope::net::verbs {
namespace {

std::string DevDir(const std::string& root, const std::string& dev) {
  return root + "/class/infiniband/" + dev;
}

std::string PortDir(const std::string& root, const std::string& dev, int port) {
  return DevDir(root, dev) + "/ports/" + std::to_string(port);
}

// One small sysfs attribute, trailing newline removed. Reading gid_attrs of an unpopulated GID fails
// with EINVAL (and inside containers for GIDs not mapped there): that is "no value", not an error.
bool ReadAttr(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  out->assign(buf, static_cast<size_t>(n));
  while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "fe80:0000:0000:0000:5054:00ff:fe12:3456": eight groups of four hex digits, as the kernel prints.
bool ParseSysfsGid(const std::string& text, std::array<uint8_t, 16>* raw) {
  if (text.size() != 39) return false;
  size_t byte = 0;
  for (size_t i = 0; i < text.size(); i += 5) {
    for (size_t j = 0; j < 4; j += 2) {
      int hi = HexDigit(text[i + j]);
      int lo = HexDigit(text[i + j + 1]);
      if (hi < 0 || lo < 0) return false;
      (*raw)[byte++] = static_cast<uint8_t>(hi << 4 | lo);
    }
    if (i + 4 < text.size() && text[i + 4] != ':') return false;
  }
  return byte == 16;
}

bool IsPciAddress(const std::string& s) {
  // dddd:bb:dd.f
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (HexDigit(s[i]) < 0) return false;
  }
  return true;
}

}  // namespace

std::string SysfsPciPath(const std::string& sysfs_root, const std::string& dev) {
  char resolved[PATH_MAX];
  if (realpath((DevDir(sysfs_root, dev) + "/device").c_str(), resolved) == nullptr) return "";
  return resolved;
}

int SysfsNumaNode(const std::string& sysfs_root, const std::string& dev) {
  std::string text;
  if (!ReadAttr(DevDir(sysfs_root, dev) + "/device/numa_node", &text)) return -1;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < -1 || v > 65535) return -1;
  return static_cast<int>(v);
}

GidType SysfsGidType(const std::string& sysfs_root, const std::string& dev, int port, int index) {
  std::string text;
  if (!ReadAttr(PortDir(sysfs_root, dev, port) + "/gid_attrs/types/" + std::to_string(index), &text)) {
    return GidType::kUnknown;
  }
  if (text == "IB/RoCE v1" || text == "RoCE v1") return GidType::kIbOrRoceV1;
  if (text == "RoCE v2") return GidType::kRoceV2;
  return GidType::kUnknown;
}

std::string SysfsGidNetdev(const std::string& sysfs_root, const std::string& dev, int port, int index) {
  std::string text;
  if (!ReadAttr(PortDir(sysfs_root, dev, port) + "/gid_attrs/ndevs/" + std::to_string(index), &text)) return "";
  return text;
}

std::vector<VerbsGid> SysfsGids(const std::string& sysfs_root, const std::string& dev, int port, int max_index) {
  std::vector<VerbsGid> out;
  const std::string dir = PortDir(sysfs_root, dev, port) + "/gids/";
  for (int i = 0; i < max_index; ++i) {
    std::string text;
    if (access((dir + std::to_string(i)).c_str(), F_OK) != 0) break;  // past the table
    VerbsGid gid;
    gid.index = i;
    if (!ReadAttr(dir + std::to_string(i), &text) || !ParseSysfsGid(text, &gid.raw)) continue;
    bool zero = true;
    for (uint8_t b : gid.raw) zero = zero && b == 0;
    if (zero) continue;
    gid.type = SysfsGidType(sysfs_root, dev, port, i);
    gid.netdev = SysfsGidNetdev(sysfs_root, dev, port, i);
    out.push_back(std::move(gid));
  }
  return out;
}

std::string NcclPciPath(const std::string& full_path) {
  size_t slash = full_path.rfind('/');
  std::string last = slash == std::string::npos ? full_path : full_path.substr(slash + 1);
  if (!IsPciAddress(last)) return full_path;
  std::string out = full_path;
  size_t n = out.size();
  out[n - 1] = '0';                 // other functions (ports) of one NIC
  out[n - 3] = out[n - 4] = '0';    // virtual functions, as NCCL_IB_MERGE_VFS=1 (its default) does
  return out;
}

}  // namespace ncclscope::net::verbs
