// OutputDir, the one file writer: exclusive unpredictable temporary names, links never followed,
// permissions from the umask, every failure reported once with the previous file left whole (on a real
// full file system: a small tmpfs in a private mount namespace, and RLIMIT_FSIZE), and the leftovers of
// dead owners removed after the grace (NCCLSCOPE_OUTPUT_GRACE_S) while live owners' files stay.
#include "common/output_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "common/call_recorder.h"
#include "common/log.h"
#include "common/params.h"
#include "log_capture.h"

namespace ncclscope {
namespace {

std::string MakeTempDir() {
  char dir[] = "/tmp/ncclscope-outdir-XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  return names;
}

std::string WorkDir(const std::string& dir) { return dir + "/.ncclscope-work-" + std::to_string(geteuid()); }

// Captures WARN lines through the logger hook NCCL would install, for one scope.
class ScopedLogCapture {
 public:
  ScopedLogCapture() {
    testing::LogCapture::Clear();
    SetNcclLogger(&testing::LogCapture::Logger);
  }
  ~ScopedLogCapture() { SetNcclLogger(nullptr); }
  std::vector<std::string> Warnings() { return testing::LogCapture::AllWarnings(); }
};

TEST(OutputDir, WritesWholeFilesWithUmaskPermissions) {
  const std::string dir = MakeTempDir();
  mode_t old = umask(022);
  ASSERT_TRUE(WriteFileAtomically(dir, "ncclscope-a.json", "first\n").ok());
  umask(077);
  ASSERT_TRUE(WriteFileAtomically(dir, "ncclscope-b.json", "second\n").ok());
  umask(old);
  struct stat st;
  ASSERT_EQ(stat((dir + "/ncclscope-a.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "node_exporter and Prometheus must be able to read it";
  ASSERT_EQ(stat((dir + "/ncclscope-b.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ReadFile(dir + "/ncclscope-a.json"), "first\n");
  ASSERT_TRUE(WriteFileAtomically(dir, "ncclscope-a.json", "replaced\n").ok());
  EXPECT_EQ(ReadFile(dir + "/ncclscope-a.json"), "replaced\n");
  // Only the lock of this process is left in the work folder: no temporary file survives a write.
  std::vector<std::string> work = List(WorkDir(dir));
  ASSERT_EQ(work.size(), 1u);
  EXPECT_NE(work[0].find(".lock"), std::string::npos) << work[0];
}

TEST(OutputDir, APlantedSymlinkAtTheFinalNameIsReplacedNotFollowed) {
  const std::string dir = MakeTempDir();
  const std::string victim = MakeTempDir() + "/victim";
  WriteFile(victim, "precious\n");
  const std::string name = "ncclscope-comm-00000000000000aa-rank0.json";
  // The final name and every temporary name the old writers used.
  for (const std::string& n : {name, name + ".tmp", name + ".tmp." + std::to_string(getpid())}) {
    ASSERT_EQ(symlink(victim.c_str(), (dir + "/" + n).c_str()), 0);
  }
  ASSERT_TRUE(WriteFileAtomically(dir, name, "dump\n").ok());
  EXPECT_EQ(ReadFile(victim), "precious\n");
  struct stat st;
  ASSERT_EQ(lstat((dir + "/" + name).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the link is replaced by our file";
  EXPECT_EQ(ReadFile(dir + "/" + name), "dump\n");
}

// The per-host folder of stall dumps: made once with the umask's permissions, written into through the work
// folder; a link or a name that is not one component is refused, a planted link inside it replaced.
TEST(OutputDir, WriteIntoASubfolder) {
  const std::string dir = MakeTempDir();
  ASSERT_TRUE(WriteFileAtomicallyIn(dir, "node1", "ncclscope-comm-a.json.gz", "one\n").ok());
  ASSERT_TRUE(WriteFileAtomicallyIn(dir, "node1", "ncclscope-comm-a.json.gz", "two\n").ok());
  EXPECT_EQ(ReadFile(dir + "/node1/ncclscope-comm-a.json.gz"), "two\n");
  struct stat st;
  ASSERT_EQ(lstat((dir + "/node1").c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0777 & ~mask);
  EXPECT_EQ(List(dir + "/node1").size(), 1u) << "no temporary file left in the subfolder";

  const std::string victim = MakeTempDir() + "/victim";
  WriteFile(victim, "precious\n");
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/node1/ncclscope-comm-b.json.gz").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomicallyIn(dir, "node1", "ncclscope-comm-b.json.gz", "b\n").ok());
  EXPECT_EQ(ReadFile(victim), "precious\n");
  ASSERT_EQ(lstat((dir + "/node1/ncclscope-comm-b.json.gz").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));

  const std::string victim_dir = MakeTempDir();
  ASSERT_EQ(symlink(victim_dir.c_str(), (dir + "/node2").c_str()), 0);
  EXPECT_FALSE(WriteFileAtomicallyIn(dir, "node2", "ncclscope-comm-c.json.gz", "c\n").ok());
  EXPECT_TRUE(List(victim_dir).empty()) << "written through a planted folder link";
  for (const char* bad : {"", ".", "..", "a/b"}) {
    EXPECT_FALSE(WriteFileAtomicallyIn(dir, bad, "ncclscope-x.json.gz", "x").ok()) << bad;
  }
}

TEST(OutputDir, CreateExclusiveRefusesAPlantedLinkOrFile) {
  const std::string dir = MakeTempDir();
  const std::string victim = MakeTempDir() + "/victim";
  WriteFile(victim, "precious\n");
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/ncclscope-record-x.jsonl").c_str()), 0);
  Result<OutputDir*> out = OutputDir::Get(dir);
  ASSERT_TRUE(out.ok()) << out.status().message();
  Result<int> fd = (*out)->CreateExclusive("ncclscope-record-x.jsonl");
  EXPECT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("exists"), std::string::npos) << fd.status().message();
  EXPECT_EQ(ReadFile(victim), "precious\n");
}

TEST(OutputDir, APlantedWorkFolderLinkIsRefusedWithAWarning) {
  const std::string dir = MakeTempDir();
  const std::string elsewhere = MakeTempDir();
  ASSERT_EQ(symlink(elsewhere.c_str(), WorkDir(dir).c_str()), 0);
  ScopedLogCapture log;
  Status s = WriteFileAtomically(dir, "ncclscope-x.prom", "metrics\n");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(List(elsewhere).empty()) << "nothing was written through the link";
  std::vector<std::string> w = log.Warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find(dir + "/ncclscope-x.prom"), std::string::npos) << w[0];
}

TEST(OutputDir, AWorkFolderOfAnotherUserIsRefusedEveryTime) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: needs root to plant a folder owned by another user (chown)";
  const std::string dir = MakeTempDir();
  ASSERT_EQ(mkdir(WorkDir(dir).c_str(), 0777), 0);
  ASSERT_EQ(chmod(WorkDir(dir).c_str(), 0777), 0);
  ASSERT_EQ(chown(WorkDir(dir).c_str(), 65534, 65534), 0);
  ScopedLogCapture log;
  for (int i = 0; i < 3; ++i) {  // a failed open must not leave a half-open folder that the next call trusts
    EXPECT_FALSE(OutputDir::Get(dir).ok()) << "call " << i;
    EXPECT_FALSE(WriteFileAtomically(dir, "ncclscope-x.json", "x").ok()) << "call " << i;
  }
  EXPECT_TRUE(List(WorkDir(dir)).empty()) << "nothing was created in the planted folder";
  EXPECT_TRUE(List(dir).size() == 1u) << "no output was written";
}

TEST(OutputDir, OurWorkFolderOpenToOthersIsClosedAgain) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(mkdir(WorkDir(dir).c_str(), 0700), 0);
  ASSERT_EQ(chmod(WorkDir(dir).c_str(), 0770), 0);  // as a default ACL on a shared project folder does
  ASSERT_TRUE(WriteFileAtomically(dir, "ncclscope-y.json", "y").ok());
  struct stat st;
  ASSERT_EQ(stat(WorkDir(dir).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(OutputDir, AFailureWarnsOnceUntilAWriteSucceeds) {
  const std::string dir = MakeTempDir();
  ASSERT_TRUE(WriteFileAtomically(dir, "ncclscope-f.json", "v1\n").ok());
  // A directory where the file should be: rename fails, every time.
  ASSERT_EQ(mkdir((dir + "/ncclscope-g.json").c_str(), 0755), 0);
  ScopedLogCapture log;
  EXPECT_FALSE(WriteFileAtomically(dir, "ncclscope-g.json", "x").ok());
  EXPECT_FALSE(WriteFileAtomically(dir, "ncclscope-g.json", "x").ok());
  EXPECT_EQ(log.Warnings().size(), 1u) << "a repeated failure warns once";
  ASSERT_EQ(rmdir((dir + "/ncclscope-g.json").c_str()), 0);
  EXPECT_TRUE(WriteFileAtomically(dir, "ncclscope-g.json", "ok").ok());
  ASSERT_EQ(unlink((dir + "/ncclscope-g.json").c_str()), 0);
  ASSERT_EQ(mkdir((dir + "/ncclscope-g.json").c_str(), 0755), 0);
  EXPECT_FALSE(WriteFileAtomically(dir, "ncclscope-g.json", "x").ok());
  EXPECT_EQ(log.Warnings().size(), 2u) << "a new failure after a success warns again";
  EXPECT_EQ(ReadFile(dir + "/ncclscope-f.json"), "v1\n");
}

// Runs `body` in a child process and returns its exit status (0 = all checks passed).
template <class Body>
int InChild(Body body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// The checks of a full file system, in the child: a small file fits, a large one does not; the failure
// names the file and the cause, the first file is whole, no temporary file is left behind.
int FullFileSystemChecks(const std::string& dir, const char* expected_error) {
  if (!WriteFileAtomically(dir, "ncclscope-t.prom", "small\n").ok()) return 10;
  Status s = WriteFileAtomically(dir, "ncclscope-t.prom", std::string(4 << 20, 'x'));
  if (s.ok()) return 11;
  if (s.message().find(expected_error) == std::string::npos) {
    std::fprintf(stderr, "unexpected error: %s\n", s.message().c_str());
    return 12;
  }
  if (ReadFile(dir + "/ncclscope-t.prom") != "small\n") return 13;
  if (List(WorkDir(dir)).size() != 1) return 14;  // only our lock
  return 0;
}

TEST(OutputDir, AFullTmpfsLeavesThePreviousFileWhole) {
  const std::string dir = MakeTempDir();
  int rc = InChild([&] {
    // A private user and mount namespace (as `unshare -rm` does) with a 1 MiB tmpfs over `dir`.
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 77;
    WriteFile("/proc/self/setgroups", "deny");
    WriteFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
    WriteFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
    if (mount("none", dir.c_str(), "tmpfs", 0, "size=1m") != 0) return 78;
    return FullFileSystemChecks(dir, "No space left on device");
  });
  if (rc == 77 || rc == 78) {
    GTEST_SKIP() << "SKIP: this sandbox allows no user+mount namespace (unshare/mount failed); the "
                    "RLIMIT_FSIZE test covers a failing write";
  }
  EXPECT_EQ(rc, 0);
}

TEST(OutputDir, RlimitFsizeLeavesThePreviousFileWhole) {
  const std::string dir = MakeTempDir();
  int rc = InChild([&] {
    signal(SIGXFSZ, SIG_IGN);  // as a job that ignores it: write() then fails with EFBIG
    rlimit lim{1 << 20, 1 << 20};
    setrlimit(RLIMIT_FSIZE, &lim);
    return FullFileSystemChecks(dir, "File too large");
  });
  EXPECT_EQ(rc, 0);
}

TEST(OutputDir, TheRecordingWarnsAtItsFirstFailedWrite) {
  const std::string dir = MakeTempDir();
  int rc = InChild([&] {
    setenv("NCCLSCOPE_RECORD_DIR", dir.c_str(), 1);
    ReloadParams();
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{64 << 10, 64 << 10};
    setrlimit(RLIMIT_FSIZE, &lim);
    ScopedLogCapture log;
    record::Recorder* r = record::Recorder::Get();
    if (r == nullptr) return 1;
    for (int i = 0; i < 20000; ++i) r->Write("call", [&](record::Line& l) { l.Int("i", i); });
    r->Flush();
    r->Flush();
    std::vector<std::string> w = log.Warnings();
    if (w.size() != 1 || w[0].find("cut short") == std::string::npos || w[0].find(r->path()) == std::string::npos) {
      for (const std::string& m : w) std::fprintf(stderr, "warning: %s\n", m.c_str());
      return 2;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// Sets the mtime of every owner lock in dir's work folder `seconds` into the past.
void BackdateLocks(const std::string& dir, int seconds) {
  for (const std::string& n : List(WorkDir(dir))) {
    if (n.size() < 5 || n.compare(n.size() - 5, 5, ".lock") != 0) continue;
    struct timespec times[2];
    clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    EXPECT_EQ(utimensat(AT_FDCWD, (WorkDir(dir) + "/" + n).c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << n;
  }
}

int CountSuffix(const std::string& dir, const std::string& suffix) {
  int n = 0;
  for (const std::string& name : List(dir)) n += name.find(suffix) != std::string::npos;
  return n;
}

// A dead owner's outputs, removed once its lock is free AND the grace since it was last alive has passed.
TEST(OutputDir, ADeadOwnersOutputsStayForTheGraceThenGo) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(InChild([&] {
              Result<OutputDir*> out = OutputDir::Get(dir);
              if (!out.ok() || !(*out)->WriteAtomically((*out)->OwnedName(".prom"), "final\n").ok()) return 1;
              WriteFile(WorkDir(dir) + "/" + (*out)->tag() + "-0123456789abcdef.tmp", "half");  // killed mid-write
              return 0;
            }),
            0);
  Result<OutputDir*> out = OutputDir::Get(dir);  // opens and sweeps: the owner wrote just now
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(CountSuffix(dir, ".prom"), 1) << "within the grace: kept (the last scrape sees the final values)";
  EXPECT_EQ(List(WorkDir(dir)).size(), 2u) << "its lock stays too, for the next sweep; its temporary file is gone";
  BackdateLocks(dir, 59);
  (*out)->Maintain();
  EXPECT_EQ(CountSuffix(dir, ".prom"), 1) << "59 s < 60 s: still kept";
  BackdateLocks(dir, 61);  // ours too: held, so it does not matter
  (*out)->Maintain();
  EXPECT_EQ(CountSuffix(dir, ".prom"), 0) << "grace passed: removed";
  EXPECT_EQ(List(WorkDir(dir)).size(), 1u) << "only our own lock is left";
}

// A dead owner's lock lists what it owned; the sweep removes only names of its own (ncclscope-<its tag>…),
// removes a link planted at one of them without following it, and leaves anything else alone.
TEST(OutputDir, TheSweepRemovesOnlyTheOwnersNamesAndNeverFollowsALink) {
  const std::string dir = MakeTempDir();
  const std::string victim = MakeTempDir() + "/victim";
  WriteFile(victim, "precious\n");
  ASSERT_EQ(InChild([&] {
              Result<OutputDir*> out = OutputDir::Get(dir);
              if (!out.ok()) return 1;
              const std::string tag = (*out)->tag();
              (*out)->OwnedName(".prom");  // listed, never written: a link is planted there below
              if (symlink(victim.c_str(), (dir + "/ncclscope-" + tag + ".prom").c_str()) != 0) return 2;
              // A foreign name in its lock file (as a corrupt or hostile lock would list).
              std::ofstream(WorkDir(dir) + "/" + tag + ".lock", std::ios::app) << "ncclscope-other.prom\n../x\n";
              return 0;
            }),
            0);
  WriteFile(dir + "/ncclscope-other.prom", "someone else's\n");
  std::vector<std::string> removed;
  ASSERT_TRUE(SweepStaleOutputs(dir, 0, &removed).ok());
  ASSERT_EQ(removed.size(), 1u) << ::testing::PrintToString(removed);
  EXPECT_EQ(ReadFile(victim), "precious\n");
  EXPECT_EQ(ReadFile(dir + "/ncclscope-other.prom"), "someone else's\n");
  EXPECT_TRUE(List(WorkDir(dir)).empty());
}

// Fixed 2026-11-27: a lock claims only the names derived from its own tag, exactly. Free, stale locks named
// with the empty tag and with prefixes of a live owner's tag (as anyone with write access to the work folder
// can make) list the live owner's textfile: the sweep must leave it and remove only those locks.
TEST(OutputDir, ALockNamedWithAnEmptyTagOrAPrefixOfALiveTagClaimsNothingOfIt) {
  const std::string dir = MakeTempDir();
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  pid_t live = fork();
  if (live == 0) {  // a live owner holding its lock while we sweep
    Result<OutputDir*> out = OutputDir::Get(dir);
    if (!out.ok() || !(*out)->WriteAtomically((*out)->OwnedName(".prom"), "live\n").ok()) _exit(1);
    char c = 1;
    (void)!write(ready[1], &c, 1);
    (void)!read(release[0], &c, 1);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::vector<std::string> locks = List(WorkDir(dir));
  ASSERT_EQ(locks.size(), 1u) << ::testing::PrintToString(locks);
  const std::string live_tag = locks[0].substr(0, locks[0].size() - 5);  // "<host>-<pid>-<hex>.lock"
  const std::string textfile = "ncclscope-" + live_tag + ".prom";
  ASSERT_EQ(ReadFile(dir + "/" + textfile), "live\n");
  const std::vector<std::string> hostile_tags = {"", live_tag.substr(0, live_tag.find('-')),
                                                 live_tag.substr(0, live_tag.size() - 1)};
  for (const std::string& tag : hostile_tags) WriteFile(WorkDir(dir) + "/" + tag + ".lock", textfile + "\n");
  BackdateLocks(dir, 3600);  // theirs past any grace (the live one's age does not matter: it is held)

  std::vector<std::string> removed;
  ASSERT_TRUE(SweepStaleOutputs(dir, 0, &removed).ok());
  EXPECT_TRUE(removed.empty()) << ::testing::PrintToString(removed);
  EXPECT_EQ(ReadFile(dir + "/" + textfile), "live\n") << "a live owner's textfile was removed";
  EXPECT_EQ(List(WorkDir(dir)), std::vector<std::string>{locks[0]}) << "the free stale locks go, the live one stays";
  ASSERT_EQ(write(release[1], &c, 1), 1);
  int status;
  waitpid(live, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The one naming rule the writer and the sweep share.
TEST(OutputDir, OwnedOutputNameNeedsATagAndOnePlainExtension) {
  EXPECT_EQ(OwnedOutputName("h-1-ab", ".prom"), "ncclscope-h-1-ab.prom");
  EXPECT_EQ(OwnedOutputName("node1.cluster-7-ab", ".json"), "ncclscope-node1.cluster-7-ab.json");
  EXPECT_EQ(OwnedOutputName("", ".prom"), "");
  for (const char* bad : {"", ".", "prom", ".a.b", ".a-b", ".a/b"}) EXPECT_EQ(OwnedOutputName("h", bad), "") << bad;
}

// The periodic pass works on the folders that are there; one removed meanwhile (by a user, an epilog) stays gone.
TEST(OutputDir, MaintainNeverRecreatesARemovedFolder) {
  const std::string dir = MakeTempDir();
  Result<OutputDir*> out = OutputDir::Get(dir);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE((*out)->WriteAtomically((*out)->OwnedName(".prom"), "x\n").ok());
  ASSERT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
  (*out)->Maintain();
  OutputDir::MaintainAll();
  struct stat st;
  EXPECT_NE(stat(dir.c_str(), &st), 0) << "a maintenance pass re-created " << dir;
}

// A clean exit marks the end of the owner's life (the grace starts there); a crash leaves the last sign of life.
TEST(OutputDir, ACleanExitRestartsTheGraceACrashDoesNot) {
  const std::string dir = MakeTempDir();
  for (bool clean : {true, false}) {
    ASSERT_EQ(InChild([&] {
                Result<OutputDir*> out = OutputDir::Get(dir);
                if (!out.ok() || !(*out)->WriteAtomically((*out)->OwnedName(clean ? ".clean" : ".crash"), "x\n").ok()) {
                  return 1;
                }
                // Its last write long ago (its own lock only: the other child's is not ours to age).
                struct timespec times[2];
                clock_gettime(CLOCK_REALTIME, &times[0]);
                times[0].tv_sec -= 300;
                times[1] = times[0];
                const std::string lock = WorkDir(dir) + "/" + (*out)->tag() + ".lock";
                if (utimensat(AT_FDCWD, lock.c_str(), times, 0) != 0) return 2;
                if (clean) exit(0);  // static destructors run: the exit hook
                _exit(0);            // as a crash: no hook
              }),
              0);
  }
  std::vector<std::string> removed;
  ASSERT_TRUE(SweepStaleOutputs(dir, 60, &removed).ok());
  ASSERT_EQ(removed.size(), 1u) << ::testing::PrintToString(removed);
  EXPECT_NE(removed[0].find(".crash"), std::string::npos) << removed[0];
  EXPECT_EQ(CountSuffix(dir, ".clean"), 1) << "a clean exit just now: within the grace";
}

// What ncclscope-cleanup does: no lock or folder of its own, held locks respected, grace 0 removes at once.
TEST(OutputDir, SweepStaleOutputsRespectsHeldLocksAndTheGrace) {
  const std::string dir = MakeTempDir();
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  pid_t live = fork();
  if (live == 0) {
    Result<OutputDir*> out = OutputDir::Get(dir);
    if (!out.ok() || !(*out)->WriteAtomically((*out)->OwnedName(".json"), "[]\n").ok()) _exit(1);
    char c = 1;
    (void)!write(ready[1], &c, 1);
    (void)!read(release[0], &c, 1);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(InChild([&] {
              Result<OutputDir*> out = OutputDir::Get(dir);
              return out.ok() && (*out)->WriteAtomically((*out)->OwnedName(".prom"), "x\n").ok() ? 0 : 1;
            }),
            0);
  BackdateLocks(dir, 3600);
  std::vector<std::string> removed;
  ASSERT_TRUE(SweepStaleOutputs(dir, 7200, &removed).ok());
  EXPECT_TRUE(removed.empty()) << ::testing::PrintToString(removed);
  ASSERT_TRUE(SweepStaleOutputs(dir, 0, &removed).ok());
  ASSERT_EQ(removed.size(), 1u) << ::testing::PrintToString(removed);
  EXPECT_NE(removed[0].find(".prom"), std::string::npos);
  EXPECT_EQ(CountSuffix(dir, ".json"), 1) << "the live owner's target stays whatever the grace";
  EXPECT_EQ(List(WorkDir(dir)).size(), 1u) << "the live owner's lock only: the sweep took none of its own";
  ASSERT_EQ(write(release[1], &c, 1), 1);
  int status;
  waitpid(live, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // Gone now, and grace 0: removed too.
  removed.clear();
  ASSERT_TRUE(SweepStaleOutputs(dir, 0, &removed).ok());
  EXPECT_EQ(removed.size(), 1u) << ::testing::PrintToString(removed);
  EXPECT_TRUE(List(WorkDir(dir)).empty());
  EXPECT_FALSE(SweepStaleOutputs(dir + "/missing", 0, &removed).ok());
}

TEST(OutputDir, LeftoversOfDeadOwnersAreRemovedLiveOnesKept) {
  const std::string dir = MakeTempDir();
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  // A live owner, waiting on a pipe while the dead one comes and goes and we sweep.
  pid_t live = fork();
  if (live == 0) {
    Result<OutputDir*> out = OutputDir::Get(dir);
    if (!out.ok() || !(*out)->WriteAtomically((*out)->OwnedName(".prom"), "live\n").ok()) _exit(1);
    char c = 1;
    (void)!write(ready[1], &c, 1);
    (void)!read(release[0], &c, 1);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  // A dead owner: an owned output, a temporary file cut short (as by kill -9 mid-write).
  ASSERT_EQ(InChild([&] {
              Result<OutputDir*> out = OutputDir::Get(dir);
              if (!out.ok()) return 1;
              const std::string name = (*out)->OwnedName(".prom");
              if (!(*out)->WriteAtomically(name, "stale\n").ok()) return 2;
              WriteFile(WorkDir(dir) + "/" + (*out)->tag() + "-0123456789abcdef.tmp", "half");
              return 0;
            }),
            0);
  size_t before = List(dir).size();
  EXPECT_EQ(before, 3u) << "two owned outputs and the work folder";
  // Both owners last seen 2 minutes ago: past the grace (60 s); only the lock tells them apart.
  BackdateLocks(dir, 120);

  Result<OutputDir*> out = OutputDir::Get(dir);  // this process's first use: sweeps
  ASSERT_TRUE(out.ok());
  std::vector<std::string> names = List(dir);
  int prom = 0;
  for (const std::string& n : names) prom += n.find(".prom") != std::string::npos;
  EXPECT_EQ(prom, 1) << "the dead owner's output is removed, the live one's kept";
  for (const std::string& n : names) {
    if (n.find(".prom") != std::string::npos) {
      EXPECT_EQ(ReadFile(dir + "/" + n), "live\n");
    }
  }
  for (const std::string& n : List(WorkDir(dir))) EXPECT_EQ(n.find(".tmp"), std::string::npos) << n;
  EXPECT_EQ(List(WorkDir(dir)).size(), 2u) << "our lock and the live owner's";
  ASSERT_EQ(write(release[1], &c, 1), 1);
  int status;
  waitpid(live, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace ncclscope
