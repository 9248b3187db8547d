// The client end's framing of the process protocol (docs/process-protocol.md) on two file descriptors: whole frames
// read and written with blocking calls. For clients written in C++ (the plugin host, host/plugin_host.cpp, and the
// scripted client of the tests). A transport failure (end of input inside a frame, a frame length outside
// [4, 2^30], a read error) calls `die` with what happened; a write to a closed pipe ends the process (nobody is
// left to answer). Internal.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "process_protocol.h"

namespace samplecheck::harness::protocol {

struct ClientFrame {
  uint32_t type = 0;
  std::vector<uint8_t> payload;
};

class ClientPipe {
 public:
  using DieFn = void (*)(const std::string& message);  // must not return
  ClientPipe(int in, int out, DieFn die) : in_(in), out_(out), die_(die) {}

  // The next frame; nullopt at end of input between frames.
  std::optional<ClientFrame> Read() {
    uint8_t header[8];
    if (!ReadExactly(header, 4)) return std::nullopt;
    if (!ReadExactly(header + 4, 4)) Fail("end of input inside a frame header");
    auto u32 = [&](int at) {
      return uint32_t(header[at]) | uint32_t(header[at + 1]) << 8 | uint32_t(header[at + 2]) << 16 |
             uint32_t(header[at + 3]) << 24;
    };
    const uint32_t length = u32(0);
    if (length < 4 || length > kMaxFrameBytes) Fail("frame length " + std::to_string(length) + " outside [4, 2^30]");
    ClientFrame frame;
    frame.type = u32(4);
    frame.payload.resize(length - 4);
    if (!frame.payload.empty() && !ReadExactly(frame.payload.data(), frame.payload.size())) {
      Fail("end of input inside a frame");
    }
    return frame;
  }

  void Send(const std::vector<uint8_t>& bytes) const {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(out_, bytes.data() + done, bytes.size() - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno != EINTR) {
        _exit(1);  // the harness is gone or closed the pipe: nobody to answer
      }
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& message) const {
    die_(message);
    _exit(2);  // die_ returned
  }

  // Exactly n bytes; false at end of input before the first byte.
  bool ReadExactly(uint8_t* data, size_t n) const {
    size_t got = 0;
    while (got < n) {
      const ssize_t r = read(in_, data + got, n - got);
      if (r > 0) {
        got += static_cast<size_t>(r);
      } else if (r == 0) {
        if (got == 0) return false;
        Fail("end of input inside a frame");
      } else if (errno != EINTR) {
        Fail(std::string("read: ") + std::strerror(errno));
      }
    }
    return true;
  }

  int in_;
  int out_;
  DieFn die_;
};

}  // namespace samplecheck::harness::protocol
