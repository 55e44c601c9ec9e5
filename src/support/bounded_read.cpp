#include "support/bounded_read.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zyntax {

namespace {

std::string size_text(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

std::optional<std::string> read_regular_file(const std::string& path, size_t limit, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<std::string> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  // O_NONBLOCK: opening a FIFO does not wait for a writer; the check below refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail(std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail("it is a directory");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("it is not a regular file (a device or a pipe)");
  }
  if (static_cast<unsigned long long>(st.st_size) > limit) {
    ::close(fd);
    return fail("it is larger than " + size_text(limit));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int err = errno;
      ::close(fd);
      return fail(std::strerror(err));
    }
    if (got == 0) break;
    if (bytes.size() + static_cast<size_t>(got) > limit) {  // grew while read
      ::close(fd);
      return fail("it is larger than " + size_text(limit));
    }
    bytes.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return bytes;
}

}  // namespace zyntax
