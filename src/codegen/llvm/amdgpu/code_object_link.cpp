#include "codegen/llvm/amdgpu/code_object_link.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace zyntax::codegen {

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A directory of its own for one link, removed with it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "zyntax-hsaco-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot make a directory for linking a code object in " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

std::string find_lld() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("ZYNTAX_LLD")) candidates.push_back(p);
  if (const char* path = std::getenv("PATH")) {
    std::string s = path;
    for (const char* name : {"ld.lld-19", "ld.lld"})
      for (size_t at = 0; at <= s.size();) {
        size_t colon = s.find(':', at);
        if (colon == std::string::npos) colon = s.size();
        if (colon > at) candidates.push_back(s.substr(at, colon - at) + "/" + name);
        at = colon + 1;
      }
  }
  candidates.push_back("/usr/lib/llvm-19/bin/ld.lld");
  candidates.push_back("/opt/rocm/llvm/bin/ld.lld");
  for (const std::string& c : candidates)
    if (!c.empty() && ::access(c.c_str(), X_OK) == 0) return c;
  return "";
}

std::string link_code_object(const std::string& object) {
  std::string lld = find_lld();
  if (lld.empty())
    throw std::runtime_error("no ld.lld to link AMDGPU code objects with (install lld-19, or set ZYNTAX_LLD to LLVM's ld.lld)");
  ScratchDir dir;
  std::filesystem::path in = dir.path() / "kernels.o", out = dir.path() / "kernels.hsaco", log = dir.path() / "ld.log";
  std::ofstream(in, std::ios::binary).write(object.data(), static_cast<std::streamsize>(object.size()));
  std::vector<std::string> args = {lld, "-shared", "--no-undefined", in.string(), "-o", out.string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, lld.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot run " + lld);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("lost " + lld + " while it linked a code object");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(lld + " cannot link the code object: " + read_file(log));
  return read_file(out);
}

}  // namespace zyntax::codegen
