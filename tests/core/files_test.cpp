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

}  // namespace
}  // namespace samplecheck
