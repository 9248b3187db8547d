#include "samplecheck/core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace samplecheck {
namespace {

Error IoError(const std::string& what, const std::filesystem::path& path, int err) {
  return {ErrorCode::kIo, what + " " + path.string() + ": " + std::strerror(err)};
}

// Writes all of `content` to fd, retrying short writes and EINTR.
bool WriteAll(int fd, std::string_view content, int* err) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// "<dir>/.<name><suffix>": a hidden sibling of `path` (the temporary file of an atomic write, a probe).
std::string HiddenSibling(const std::filesystem::path& path, const char* suffix) {
  std::string name = path.filename().string();
  name.insert(name.begin(), '.');
  name.append(suffix);
  std::filesystem::path sibling = path.parent_path();
  if (sibling.empty()) sibling = ".";
  sibling /= name;
  return sibling.string();
}

std::filesystem::path DirectoryOf(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

// The file the caller means: the final path itself, or (following a link when allowed) the file it names.
Result<std::filesystem::path> Target(const std::filesystem::path& path, const WriteOptions& options) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      if (!options.follow_symlink) {
        return Error{ErrorCode::kIo, "will not write " + path.string() +
                                         ": it is a symbolic link (remove it, or ask to follow links)"};
      }
      std::error_code ec;
      std::filesystem::path resolved = std::filesystem::weakly_canonical(path, ec);
      if (ec) return Error{ErrorCode::kIo, "cannot resolve the link " + path.string() + ": " + ec.message()};
      return resolved;
    }
    if (S_ISDIR(st.st_mode)) return Error{ErrorCode::kIo, "cannot write " + path.string() + ": it is a directory"};
  }
  return path;
}

}  // namespace

Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content, const WriteOptions& options) {
  Result<std::filesystem::path> target = Target(path, options);
  if (!target.ok()) return target.error();
  const std::filesystem::path dir = DirectoryOf(*target);
  std::string tmp = HiddenSibling(*target, ".tmp-XXXXXX");
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return IoError("cannot create a temporary file in the directory of", *target, errno);
  int err = 0;
  bool ok = WriteAll(fd, content, &err);
  if (ok && ::fsync(fd) != 0) {
    err = errno;
    ok = false;
  }
  // Keep the permissions of the file being replaced; a new file gets 0644 (mkstemp makes 0600).
  struct stat old {};
  const mode_t mode = ::stat(target->c_str(), &old) == 0 ? (old.st_mode & 07777) : 0644;
  if (ok && ::fchmod(fd, mode) != 0) {
    err = errno;
    ok = false;
  }
  if (::close(fd) != 0 && ok) {
    err = errno;
    ok = false;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return IoError("cannot write", *target, err);
  }
  if (::rename(tmp.c_str(), target->c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return IoError("cannot replace", *target, err);
  }
  // The rename is durable once the directory is synced; a failure here leaves the new file in place.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

Status CheckWritable(const std::filesystem::path& path, const WriteOptions& options) {
  Result<std::filesystem::path> target = Target(path, options);
  if (!target.ok()) return target.error();
  std::string probe = HiddenSibling(*target, ".probe-XXXXXX");
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return IoError("cannot write in the directory of", *target, errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

Result<std::string> ReadFileCapped(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot read " + std::string(what), path, errno);
  std::string content;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return IoError("cannot read " + std::string(what), path, err);
    }
    if (n == 0) break;
    if (content.size() + static_cast<uint64_t>(n) > max_bytes) {
      ::close(fd);
      return Error{ErrorCode::kIo, std::string(what) + " " + path.string() + " is larger than " +
                                       std::to_string(max_bytes) + " bytes, the most samplecheck reads as " +
                                       std::string(what)};
    }
    content.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return content;
}

Status AppendLineDurably(const std::filesystem::path& path, std::string_view line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return IoError("cannot open", path, errno);
  std::string text(line);
  text.push_back('\n');
  int err = 0;
  bool ok = WriteAll(fd, text, &err);
  if (ok && ::fsync(fd) != 0) {
    err = errno;
    ok = false;
  }
  ::close(fd);
  if (!ok) return IoError("cannot append to", path, err);
  return Status::Ok();
}

}  // namespace samplecheck
