// Output safety of core/files.h: only a regular writable file is replaced (never a device, a FIFO or a read-only
// file, also as root), outputs are distinct from each other and from the inputs, one writer per output (a lock).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "samplecheck/core/files.h"

namespace samplecheck {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("files_test." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_ / "ro.json", fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

TEST_F(FilesTest, ADeviceNodeIsNeverReplaced) {
  // Checked only, never written: CheckWritable is what every command calls first, and WriteFileAtomically refuses
  // through the same test (a FIFO below proves the write path).
  const Status st = CheckWritable("/dev/null");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("character device"), std::string::npos) << st.error().message;
}

TEST_F(FilesTest, AFifoIsNeitherReplacedNorOpened) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_FALSE(CheckWritable(fifo).ok());
  const Status st = WriteFileAtomically(fifo, "report");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("FIFO"), std::string::npos) << st.error().message;
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_FALSE(AppendLineDurably(fifo, "line").ok());  // would block forever opening a FIFO with no reader
}

TEST_F(FilesTest, AReadOnlyFileIsNotReplacedEvenByRoot) {
  const fs::path ro = dir_ / "ro.json";
  std::ofstream(ro) << "keep";
  fs::permissions(ro, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const Status st = WriteFileAtomically(ro, "new");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("read-only (mode 0444)"), std::string::npos) << st.error().message;
  EXPECT_EQ(Read(ro), "keep");
}

TEST_F(FilesTest, OutputsAreDistinctFromEachOtherAndFromInputs) {
  const fs::path a = dir_ / "a.json", b = dir_ / "b.json", link = dir_ / "link.json", hard = dir_ / "hard.json";
  std::ofstream(a) << "a";
  fs::create_symlink(a, link);
  fs::create_hard_link(a, hard);
  EXPECT_TRUE(CheckOutputsDistinct({{"--report", b}, {"--html", dir_ / "b.html"}}, {{"shard 1", a}}).ok());
  EXPECT_FALSE(CheckOutputsDistinct({{"--report", b}, {"--html", b}}, {}).ok());  // neither exists yet
  EXPECT_FALSE(CheckOutputsDistinct({{"--report", dir_ / "x/../b.json"}, {"--html", b}}, {}).ok());
  for (const fs::path& same : {a, link, hard}) {
    const Status st = CheckOutputsDistinct({{"--report", same}}, {{"shard report 1", a}});
    ASSERT_FALSE(st.ok()) << same;
    EXPECT_NE(st.error().message.find("shard report 1"), std::string::npos) << st.error().message;
  }
  EXPECT_TRUE(CheckOutputsDistinct({{"--report", b}, {"--html", ""}}, {{"the suite", ""}}).ok());
}

TEST_F(FilesTest, OneWriterPerOutput) {
  const fs::path report = dir_ / "r.json";
  {
    Result<OutputLock> first = OutputLock::Acquire(report);
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_TRUE(fs::exists(OutputLock::LockPathFor(report)));
    Result<OutputLock> second = OutputLock::Acquire(report);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.error().message.find("pid " + std::to_string(::getpid())), std::string::npos)
        << second.error().message;
  }
  EXPECT_FALSE(fs::exists(OutputLock::LockPathFor(report)));  // removed with its holder
  EXPECT_TRUE(OutputLock::Acquire(report).ok());
}

// An output written through a symbolic link (--follow-symlinks) is locked on the file the link names: a writer
// through the link and one on the target's own path are one writer (issue 44); the refusal names the link.
TEST_F(FilesTest, ALinkedOutputIsLockedOnItsTarget) {
  const fs::path real = fs::canonical(dir_) / "real.json";
  const fs::path link = dir_ / "link.json";
  fs::create_symlink("real.json", link);
  const WriteOptions follow{.follow_symlink = true};
  {
    Result<std::vector<OutputLock>> first = LockOutputs({{"--report", real}});
    ASSERT_TRUE(first.ok()) << first.error().message;
    Result<std::vector<OutputLock>> through = LockOutputs({{"--report", link}}, follow);
    ASSERT_FALSE(through.ok());
    EXPECT_NE(through.error().message.find("--report " + link.string() + " (a link to " + real.string() +
                                           "): another samplecheck (pid " + std::to_string(::getpid()) +
                                           ") is writing " + real.string()),
              std::string::npos)
        << through.error().message;
  }
  Result<std::vector<OutputLock>> through = LockOutputs({{"--report", link}}, follow);
  ASSERT_TRUE(through.ok()) << through.error().message;
  EXPECT_TRUE(fs::exists(OutputLock::LockPathFor(real)));
  EXPECT_FALSE(fs::exists(OutputLock::LockPathFor(link)));
  Result<std::vector<OutputLock>> second = LockOutputs({{"--report", real}});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("is writing " + real.string()), std::string::npos) << second.error().message;
}

// A file that must be a regular file (a case's .npy) is refused when it is a FIFO or a directory, without blocking
// in open() (a FIFO without a writer), naming what it was read as, the path and what it is.
TEST_F(FilesTest, ARegularFileReadRefusesAFifoWithoutBlocking) {
  const fs::path fifo = dir_ / "rows.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  Result<std::string> read = ReadRegularFileCapped(fifo, 1 << 20, "an .npy file");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, ErrorCode::kIo);
  EXPECT_EQ(read.error().message,
            "will not read an .npy file " + fifo.string() + ": it is a FIFO (named pipe), not a regular file");
  read = ReadRegularFileCapped(dir_, 1 << 20, "an .npy file");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find(": it is a directory, not a regular file"), std::string::npos)
      << read.error().message;
  std::ofstream(dir_ / "a.npy") << "0123456789";
  read = ReadRegularFileCapped(dir_ / "a.npy", 1 << 20, "an .npy file");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, "0123456789");
  read = ReadRegularFileCapped(dir_ / "a.npy", 4, "an .npy file");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find("is larger than 4 bytes"), std::string::npos) << read.error().message;
}

}  // namespace
}  // namespace samplecheck
