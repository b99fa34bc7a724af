#include "common/call_recorder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/build_role.h"
#include "common/clock.h"
#include "common/host.h"
#include "common/log.h"
#include "common/output_dir.h"
#include "common/random.h"
#include "common/params.h"

namespace ncclscope::record {
namespace {

void AppendEscaped(std::string* out, const char* s) {
  out->push_back('"');
  for (; *s != '\0'; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", c);
      out->append(esc);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

void FlushAtExit() {
  if (Recorder* r = Recorder::Get()) r->Flush();
}

}  // namespace

void Line::Key(const char* key) {
  r_->mu_.AssertHeld();
  std::string& b = r_->buf_;
  if (!first_) b.push_back(',');
  first_ = false;
  AppendEscaped(&b, key);
  b.push_back(':');
}

Line& Line::Str(const char* key, const char* value) {
  r_->mu_.AssertHeld();
  Key(key);
  if (value == nullptr) {
    r_->buf_.append("null");
  } else {
    AppendEscaped(&r_->buf_, value);
  }
  return *this;
}

Line& Line::Int(const char* key, int64_t value) {
  r_->mu_.AssertHeld();
  Key(key);
  r_->buf_.append(std::to_string(value));
  return *this;
}

Line& Line::Uint(const char* key, uint64_t value) {
  r_->mu_.AssertHeld();
  Key(key);
  r_->buf_.append(std::to_string(value));
  return *this;
}

Line& Line::Hex(const char* key, uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return Str(key, text);
}

Line& Line::Bool(const char* key, bool value) {
  r_->mu_.AssertHeld();
  Key(key);
  r_->buf_.append(value ? "true" : "false");
  return *this;
}

Line& Line::Null(const char* key) {
  r_->mu_.AssertHeld();
  Key(key);
  r_->buf_.append("null");
  return *this;
}

Line& Line::NewId(const char* key, const void* p, char prefix) {
  r_->mu_.AssertHeld();
  if (p == nullptr) return Null(key);
  uint64_t n = ++r_->next_id_;
  r_->ids_[reinterpret_cast<uintptr_t>(p)] = Recorder::Id{prefix, n};
  char text[32];
  std::snprintf(text, sizeof(text), "%c%" PRIu64, prefix, n);
  return Str(key, text);
}

Line& Line::SameOrNewId(const char* key, const void* p, char prefix) {
  r_->mu_.AssertHeld();
  if (p != nullptr && r_->ids_.contains(reinterpret_cast<uintptr_t>(p))) return Ref(key, p);
  return NewId(key, p, prefix);
}

Line& Line::Ref(const char* key, const void* p) {
  r_->mu_.AssertHeld();
  if (p == nullptr) return Null(key);
  auto it = r_->ids_.find(reinterpret_cast<uintptr_t>(p));
  char text[32];
  if (it == r_->ids_.end()) {
    std::snprintf(text, sizeof(text), "?0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
  } else {
    std::snprintf(text, sizeof(text), "%c%" PRIu64, it->second.prefix, it->second.number);
  }
  return Str(key, text);
}

Line& Line::Open(const char* key) {
  r_->mu_.AssertHeld();
  Key(key);
  r_->buf_.push_back('{');
  first_ = true;
  return *this;
}

Line& Line::Close() {
  r_->mu_.AssertHeld();
  r_->buf_.push_back('}');
  first_ = false;
  return *this;
}

Recorder* Recorder::Create() {
  const std::string& dir = Params().Str(ParamId::kRecordDir);
  // An inner test plugin (build_role.h) records nothing: the ncclscope wrapping it records the job's calls.
  if (dir.empty() || FixedTransport() != nullptr) return nullptr;
  Result<OutputDir*> out = OutputDir::Get(dir);
  if (!out.ok()) {
    NCCLSCOPE_WARN(subsys::kAll, "NCCLSCOPE_RECORD_DIR: %s; not recording", out.status().message().c_str());
    return nullptr;
  }
  // Created exclusively, never through a link: a name someone planted (or a reused pid's file) gets a
  // random suffix instead of being overwritten.
  const std::string stem = "ncclscope-record-" + HostName() + "-" + std::to_string(getpid());
  std::string name = stem + ".jsonl";
  Result<int> fd = (*out)->CreateExclusive(name);
  if (!fd.ok()) {
    name = stem + "-" + RandomHex() + ".jsonl";
    fd = (*out)->CreateExclusive(name);
  }
  if (!fd.ok()) {
    NCCLSCOPE_WARN(subsys::kAll, "NCCLSCOPE_RECORD_DIR: %s; not recording", fd.status().message().c_str());
    return nullptr;
  }
  auto* r = new Recorder(*fd, dir + "/" + name);  // lives for the process: calls can arrive until exit
  std::atexit(FlushAtExit);
  NCCLSCOPE_INFO(subsys::kAll, "recording every plugin call to %s", r->path().c_str());
  return r;
}

Recorder::Recorder(int fd, std::string path) : fd_(fd), path_(std::move(path)), t0_ns_(MonotonicNs()) {
  buf_.reserve(1 << 20);
  buf_.append("{\"format\":\"ncclscope.record.v1\",\"host\":");
  AppendEscaped(&buf_, HostName().c_str());
  buf_.append(",\"pid\":" + std::to_string(getpid()) + ",\"t\":\"ns since this line, CLOCK_MONOTONIC\"}\n");
}

int Recorder::ThreadIdLocked() {
  int tid = static_cast<int>(syscall(SYS_gettid));
  auto [it, added] = threads_.try_emplace(tid, static_cast<int>(threads_.size()) + 1);
  if (added) {
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    buf_.append("{\"call\":\"thread\",\"tid\":" + std::to_string(it->second) + ",\"name\":");
    AppendEscaped(&buf_, name);
    buf_.append("}\n");
  }
  return it->second;
}

Line Recorder::BeginLocked(const char* call) {
  int tid = ThreadIdLocked();
  buf_.append("{\"i\":" + std::to_string(next_line_++) + ",\"t\":" + std::to_string(MonotonicNs() - t0_ns_) +
              ",\"tid\":" + std::to_string(tid) + ",\"call\":");
  AppendEscaped(&buf_, call);
  Line line(this);
  line.first_ = false;
  return line;
}

void Recorder::EndLocked() {
  buf_.append("}\n");
  if (buf_.size() >= (1 << 20) - 4096) FlushLocked();
}

void Recorder::FlushLocked() {
  const char* p = buf_.data();
  size_t left = buf_.size();
  while (left > 0) {
    ssize_t n = write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // disk full: the trace is cut short, the job goes on, the user is told once
      if (!write_failed_) {
        write_failed_ = true;
        NCCLSCOPE_WARN(subsys::kAll, "recording %s is cut short at %lld bytes: %s", path_.c_str(),
                       static_cast<long long>(lseek(fd_, 0, SEEK_CUR)), n < 0 ? std::strerror(errno) : "short write");
      }
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  buf_.clear();
}

void Recorder::Tally(const void* key) {
  AnnotatedLock lock(&mu_);
  ++tallies_[reinterpret_cast<uintptr_t>(key)];
}

uint64_t Recorder::Take(const void* key) {
  AnnotatedLock lock(&mu_);
  auto it = tallies_.find(reinterpret_cast<uintptr_t>(key));
  if (it == tallies_.end()) return 0;
  uint64_t n = it->second;
  tallies_.erase(it);
  return n;
}

bool Recorder::Repeat(const void* key, uint64_t signature) {
  AnnotatedLock lock(&mu_);
  auto [it, added] = last_signature_.try_emplace(reinterpret_cast<uintptr_t>(key), signature);
  if (!added && it->second == signature) {
    ++tallies_[reinterpret_cast<uintptr_t>(key)];
    return true;
  }
  it->second = signature;
  return false;
}

void Recorder::Forget(const void* key) {
  AnnotatedLock lock(&mu_);
  last_signature_.erase(reinterpret_cast<uintptr_t>(key));
}

namespace {
constexpr size_t kTokenRegionBytes = size_t{1} << 32;  // 256 M tokens of 16 bytes before wrapping around
}  // namespace

void* Recorder::Wrap(void* handle) {
  if (handle == nullptr) return nullptr;
  AnnotatedLock lock(&mu_);
  if (token_base_ == 0) {
    void* region = mmap(nullptr, kTokenRegionBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return handle;  // no tokens: record our handles as they are
    token_base_ = reinterpret_cast<uintptr_t>(region);
  }
  uintptr_t token = token_base_ + 16 * (next_token_++ % (kTokenRegionBytes / 16));
  tokens_[token] = handle;
  return reinterpret_cast<void*>(token);
}

void* Recorder::Unwrap(const void* token) {
  AnnotatedLock lock(&mu_);
  auto it = tokens_.find(reinterpret_cast<uintptr_t>(token));
  return it != tokens_.end() ? it->second : const_cast<void*>(token);
}

void Recorder::Flush() {
  AnnotatedLock lock(&mu_);
  FlushLocked();
}

}  // namespace ncclscope::record
