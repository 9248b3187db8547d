// Writing result files so that nothing is lost: a report, an HTML page or a journal either replaces the previous
// file whole or leaves it untouched, byte for byte.
//
// WriteFileAtomically writes the content to a temporary file in the same directory (mkstemp), fsyncs it, renames it
// over the final path and fsyncs the directory. A full disk, a write error or a crash before the rename leave the
// previous file as it was (the temporary file is removed on every error path). The final path is never followed
// through a symbolic link unless the caller allows it: by default a link there is an error naming it (kIo), so a
// report cannot be redirected onto another file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "samplecheck/core/error.h"

namespace samplecheck {

struct WriteOptions {
  bool follow_symlink = false;  // write through a symbolic link at the final path (to the file it names)
};

// kIo naming the path and the OS reason (strerror) when any step fails; the previous file is then intact.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content, const WriteOptions& options = {});

// Whether `path` can be written by WriteFileAtomically: its directory exists and is writable (a temporary file is
// created and removed there), and the path is not a directory, nor a symbolic link unless allowed. For checking
// output paths before a long run starts. kIo naming the path and the OS reason.
Status CheckWritable(const std::filesystem::path& path, const WriteOptions& options = {});

// The whole content of the file at `path`, refusing more than `max_bytes` (a device such as /dev/zero, a FIFO, or a
// file far larger than anything samplecheck reads would otherwise grow memory without bound). kIo naming the path,
// `what` it was read as and the limit, or the OS reason.
Result<std::string> ReadFileCapped(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// Appends `line` and a newline to the file at `path` (created with mode 0644 when missing) and fsyncs it: a
// journal line is either whole on disk or absent after a crash (a torn last line is detected by its reader).
Status AppendLineDurably(const std::filesystem::path& path, std::string_view line);

}  // namespace samplecheck
