#include "samplecheck/core/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

// What a non-regular file is, for a message.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// An existing file at `path` (already resolved) may be replaced only when it is a regular file that may be written:
// the rename of an atomic write would otherwise put a regular file where a device node or a FIFO was (as root,
// /dev/null itself), or replace a file its owner made read-only. Root passes access(W_OK) for any file, so the
// permission bits are read too.
Status ReplaceableFile(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();  // absent: created
  if (!S_ISREG(st.st_mode)) {
    return Error{ErrorCode::kIo, "will not write " + path.string() + ": it is " + KindOf(st.st_mode) +
                                     ", not a regular file (samplecheck replaces its output files whole)"};
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || ::access(path.c_str(), W_OK) != 0) {
    return Error{ErrorCode::kIo, "will not replace " + path.string() + ": it is read-only (mode " + mode +
                                     "); make it writable or write elsewhere"};
  }
  return Status::Ok();
}

bool IsLink(const std::filesystem::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// The file a symbolic link at `path` names, link after link, also when that file does not exist yet (a dangling
// link names the file a write creates; weakly_canonical alone would stop at the link itself).
Result<std::filesystem::path> ResolveLink(const std::filesystem::path& path) {
  std::filesystem::path p = path;
  for (int hops = 0; IsLink(p); ++hops) {
    std::error_code ec;
    const std::filesystem::path next = std::filesystem::read_symlink(p, ec);
    if (ec || hops == 40) {
      return Error{ErrorCode::kIo, "cannot resolve the link " + path.string() + ": " +
                                       (ec ? ec.message() : std::string("more than 40 links in a row"))};
    }
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::weakly_canonical(p, ec);
  if (ec) return Error{ErrorCode::kIo, "cannot resolve the link " + path.string() + ": " + ec.message()};
  return resolved;
}

// The file the caller means: the final path itself, or (following a link when allowed) the file it names. Refuses
// what may not be replaced (ReplaceableFile).
Result<std::filesystem::path> Target(const std::filesystem::path& path, const WriteOptions& options) {
  std::filesystem::path target = path;
  if (IsLink(path)) {
    if (!options.follow_symlink) {
      return Error{ErrorCode::kIo, "will not write " + path.string() +
                                       ": it is a symbolic link (remove it, or ask to follow links)"};
    }
    Result<std::filesystem::path> resolved = ResolveLink(path);
    if (!resolved.ok()) return resolved.error();
    target = *resolved;
  }
  if (Status replaceable = ReplaceableFile(target); !replaceable.ok()) return replaceable.error();
  return target;
}

// The identity of a file for comparing paths: (device, inode) when it exists, else its normalized absolute path.
struct FileIdentity {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::filesystem::path normal;
  bool operator==(const FileIdentity& o) const {
    return exists && o.exists ? dev == o.dev && ino == o.ino : normal == o.normal;
  }
};

FileIdentity IdentityOf(const std::filesystem::path& path) {
  FileIdentity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  std::error_code ec;
  id.normal = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) id.normal = std::filesystem::absolute(path, ec).lexically_normal();
  return id;
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

namespace {

// The whole content of the open `fd` (closed here), at most `max_bytes` (ReadFileCapped).
Result<std::string> ReadCapped(int fd, const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
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

}  // namespace

Result<std::string> ReadFileCapped(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot read " + std::string(what), path, errno);
  return ReadCapped(fd, path, max_bytes, what);
}

Result<std::string> ReadRegularFileCapped(const std::filesystem::path& path, uint64_t max_bytes,
                                          std::string_view what) {
  // O_NONBLOCK: the open of a FIFO without a writer returns at once instead of blocking (and a blocked open() is
  // not ended by a stop signal); the file is checked before a byte is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return IoError("cannot read " + std::string(what), path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("cannot read " + std::string(what), path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{ErrorCode::kIo, "will not read " + std::string(what) + " " + path.string() + ": it is " +
                                     KindOf(st.st_mode) + ", not a regular file"};
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return ReadCapped(fd, path, max_bytes, what);
}

Status AppendLineDurably(const std::filesystem::path& path, std::string_view line) {
  // Never a FIFO (the open would block), a device or a read-only file.
  if (Status st = ReplaceableFile(path); !st.ok()) return st;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
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

Status CheckOutputsDistinct(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::vector<std::pair<const NamedPath*, FileIdentity>> seen;
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;
    const FileIdentity id = IdentityOf(out.path);
    for (const auto& [other, other_id] : seen) {
      if (other_id == id) {
        return InvalidArgument(out.role + " and " + other->role + " name the same file (" + out.path.string() +
                               "): one would overwrite the other; give each output its own path");
      }
    }
    for (const NamedPath& in : inputs) {
      if (in.path.empty()) continue;
      if (IdentityOf(in.path) == id) {
        return InvalidArgument(out.role + " " + out.path.string() + " is " + in.role + " (" + in.path.string() +
                               ") that this command reads: writing it would destroy its input; write elsewhere");
      }
    }
    seen.emplace_back(&out, id);
  }
  return Status::Ok();
}

Status CheckOutputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs,
                    const WriteOptions& options) {
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;
    if (Status st = CheckWritable(out.path, options); !st.ok()) return st.error().WithContext(out.role);
  }
  return CheckOutputsDistinct(outputs, inputs);
}

std::filesystem::path OutputLock::LockPathFor(const std::filesystem::path& path) {
  std::filesystem::path lock = path;
  lock += ".lock";
  return lock;
}

Result<OutputLock> OutputLock::Acquire(const std::filesystem::path& path) {
  const std::filesystem::path lock_path = LockPathFor(path);
  // The holder removes the lock file when it is done: a lock taken on a file that was removed meanwhile is no lock,
  // so take it again on the file now at the path.
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (Status st = ReplaceableFile(lock_path); !st.ok()) return st.error();
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0) return IoError("cannot create the lock file", lock_path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char buf[32] = {0};
      const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) return IoError("cannot lock", lock_path, err);
      std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      return Error{ErrorCode::kIo, "another samplecheck (pid " + holder + ") is writing " + path.string() +
                                       " (it holds " + lock_path.string() +
                                       "): one writer per report; wait for it to finish or write elsewhere"};
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
        // The pid is only for the message of a second writer; the lock holds without it.
      }
      return OutputLock(fd, lock_path);
    }
    ::close(fd);  // removed or replaced while we waited: lock the file now at the path
  }
  return Error{ErrorCode::kIo, "cannot lock " + lock_path.string() + ": it keeps being replaced"};
}

OutputLock::OutputLock(OutputLock&& other) noexcept : fd_(other.fd_), lock_path_(std::move(other.lock_path_)) {
  other.fd_ = -1;
}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    lock_path_ = std::move(other.lock_path_);
    other.fd_ = -1;
  }
  return *this;
}

OutputLock::~OutputLock() { Release(); }

void OutputLock::Release() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // while still held: a waiter that opened it sees it gone and retries
  ::close(fd_);
  fd_ = -1;
}

Result<std::vector<OutputLock>> LockOutputs(const std::vector<NamedPath>& outputs, const WriteOptions& options) {
  std::vector<OutputLock> locks;
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;
    // The file that is written (Target): through a link, the file it names, so that a writer through the link and
    // one on the target's own path take the same lock.
    std::filesystem::path locked = out.path;
    std::string context;  // the link, when one was followed
    if (options.follow_symlink && IsLink(out.path)) {
      Result<std::filesystem::path> resolved = ResolveLink(out.path);
      if (!resolved.ok()) return resolved.error();
      locked = *resolved;
      context = out.role + " " + out.path.string() + " (a link to " + locked.string() + ")";
    }
    Result<OutputLock> lock = OutputLock::Acquire(locked);
    if (!lock.ok()) return context.empty() ? lock.error() : lock.error().WithContext(context);
    locks.push_back(std::move(*lock));
  }
  return locks;
}

}  // namespace samplecheck
