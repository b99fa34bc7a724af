// ParseTagNames on arbitrary text, in both forms NCCLSCOPE_TAG_NAMES takes: the inline list
// ("1=forward,2=backward") and @FILE (the same bytes written to a temporary file, one pair a line).
// Besides ASan/UBSan, checks that every name kept is one tag_names.h allows.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/tag_names.h"

namespace {

void IgnoreWarning(const std::string&) {}

bool AllowedName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == ':' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void CheckNames(const ncclscope::TagNameMap& names) {
  for (const auto& [tag, name] : names) {
    if (tag == 0 || tag > 0x7fffffffffffffffull || !AllowedName(name)) abort();
  }
}

// One regular file per process, rewritten for each input: the @FILE form reads a path, not bytes. In
// $TMPDIR (run_fuzz.sh points it at its scratch folder, which it removes: libFuzzer ends with _Exit, no
// destructor of ours runs), else /dev/shm: truncating a file on a disk costs a block discard, 20 times
// the parse.
const std::string& TagFile() {
  static const std::string path = [] {
    const char* tmpdir = getenv("TMPDIR");
    std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    if (tmpdir != nullptr && *tmpdir != '\0') dir = tmpdir;
    std::string tmpl = dir + "/ncclscope-fuzz-tags-XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) abort();
    close(fd);
    return tmpl;
  }();
  return path;
}

void WriteTagFile(const uint8_t* data, size_t size) {
  const int fd = open(TagFile().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // An inline value starting with '@' names a file: the fuzzer must not open paths of this machine.
  if (text.empty() || text[0] != '@') CheckNames(ncclscope::ParseTagNames(text, IgnoreWarning));
  WriteTagFile(data, size);
  CheckNames(ncclscope::ParseTagNames("@" + TagFile(), IgnoreWarning));
  return 0;
}
