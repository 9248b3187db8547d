// Writing result files so that nothing is lost: a report, an HTML page or a journal either replaces the previous
// file whole or leaves it untouched, byte for byte.
//
// WriteFileAtomically writes the content to a temporary file in the same directory (mkstemp), fsyncs it, renames it
// over the final path and fsyncs the directory. A full disk, a write error or a crash before the rename leave the
// previous file as it was (the temporary file is removed on every error path). The final path is never followed
// through a symbolic link unless the caller allows it: by default a link there is an error naming it (kIo), so a
// report cannot be redirected onto another file. Only a regular file that can be written is replaced: a device
// (/dev/null, /dev/full), a FIFO, a socket, a directory or a read-only file at the final path is refused (kIo naming
// the path and what it is), also for root, whom the OS would let replace them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck {

struct WriteOptions {
  bool follow_symlink = false;  // write through a symbolic link at the final path (to the file it names)
};

// kIo naming the path and the OS reason (strerror) when any step fails; the previous file is then intact.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content, const WriteOptions& options = {});

// Whether `path` can be written by WriteFileAtomically: its directory exists and is writable (a temporary file is
// created and removed there), and the path is absent or a regular file with a write permission, nor a symbolic
// link unless allowed. For checking output paths before a long run starts. kIo naming the path and the OS reason.
Status CheckWritable(const std::filesystem::path& path, const WriteOptions& options = {});

// A file a command names, and what it is to the command ("--report", "the suite", "shard report 2").
struct NamedPath {
  std::string role;
  std::filesystem::path path;
};

// The outputs of one command are distinct files, none of them one of its inputs (the same path, another path to the
// same file, or a link to it): `merge a.json b.json --report a.json` and `--report x --html x` would destroy a file.
// kInvalidArgument naming both roles and the path. Empty paths are ignored.
Status CheckOutputsDistinct(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

// Every check an output of a command needs before the command starts: CheckWritable for each, then
// CheckOutputsDistinct. kIo / kInvalidArgument as those.
Status CheckOutputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs,
                    const WriteOptions& options = {});

// One writer per output: an exclusive lock (flock) on "<path>.lock", held while the object lives and removed with it.
// A second samplecheck writing the same report (and its journal) gets kIo naming the path and the holder's pid
// instead of deleting the first one's journal. The lock dies with its process (a crash or a kill never leaves a
// stale lock, only a file that the next writer reuses).
class OutputLock {
 public:
  static Result<OutputLock> Acquire(const std::filesystem::path& path);
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

  // "<path>.lock".
  static std::filesystem::path LockPathFor(const std::filesystem::path& path);

 private:
  OutputLock(int fd, std::filesystem::path lock_path) : fd_(fd), lock_path_(std::move(lock_path)) {}
  void Release();
  int fd_ = -1;
  std::filesystem::path lock_path_;
};

// Locks of every non-empty path (OutputLock::Acquire each, in order); the first failure is returned. An output written
// through a symbolic link (options.follow_symlink) is locked on the file the link resolves to ("<target>.lock"; its
// failure names the output's role and the link): the link and the target's own path are one report, one writer.
Result<std::vector<OutputLock>> LockOutputs(const std::vector<NamedPath>& outputs, const WriteOptions& options = {});

// The whole content of the file at `path`, refusing more than `max_bytes` (a device such as /dev/zero, a FIFO, or a
// file far larger than anything samplecheck reads would otherwise grow memory without bound). kIo naming the path,
// `what` it was read as and the limit, or the OS reason.
Result<std::string> ReadFileCapped(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// ReadFileCapped of a file that must be a regular file (a case's .npy, read again for every row): a FIFO, a socket, a
// device or a directory is refused (kIo naming `what`, the path and what it is) without blocking, since it is opened
// non-blocking and checked (fstat) before a byte is read; a FIFO would otherwise block open() until a writer comes.
Result<std::string> ReadRegularFileCapped(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// Appends `line` and a newline to the file at `path` (created with mode 0644 when missing) and fsyncs it: a
// journal line is either whole on disk or absent after a crash (a torn last line is detected by its reader).
Status AppendLineDurably(const std::filesystem::path& path, std::string_view line);

}  // namespace samplecheck
