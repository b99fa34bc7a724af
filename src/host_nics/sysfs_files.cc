#include "host_nics/sysfs_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace ncclscope {

std::optional<std::string> ReadSysfsLine(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  char buf[256];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n < 0) return std::nullopt;
  std::string line(buf, static_cast<size_t>(n));
  const size_t end = line.find('\n');
  if (end != std::string::npos) line.resize(end);
  return line;
}

std::optional<uint64_t> ReadSysfsCounter(const std::string& path) {
  const std::optional<std::string> line = ReadSysfsLine(path);
  if (!line || line->empty() || !std::isdigit(static_cast<unsigned char>((*line)[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(line->c_str(), &end, 10);
  if (errno != 0 || (*end != '\0' && *end != ' ')) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::vector<std::string> ListSysfsDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string SysfsLinkName(const std::string& path) {
  char target[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return "";
  const std::string text(target, static_cast<size_t>(n));
  const size_t slash = text.rfind('/');
  return slash == std::string::npos ? text : text.substr(slash + 1);
}

SysfsDeviceLocation ReadDeviceLocation(const std::string& device_link) {
  SysfsDeviceLocation loc;
  const long numa = std::strtol(ReadSysfsLine(device_link + "/numa_node").value_or("-1").c_str(), nullptr, 10);
  loc.numa_node = numa < 0 ? -1 : static_cast<int>(numa);
  const std::string name = SysfsLinkName(device_link);
  if (name.find(':') == std::string::npos) return loc;
  loc.pci = name;
  char resolved[PATH_MAX];
  if (::realpath(device_link.c_str(), resolved) != nullptr) loc.path = resolved;
  return loc;
}

}  // namespace ncclscope
