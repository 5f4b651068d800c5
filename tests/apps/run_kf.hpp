// Runs the kf binary from tests: its exit code and combined output (run_kf), or `kf serve` on a
// free loopback port for as long as a kf_server lives.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.hpp"

namespace kf::test {

struct result {
  int code;
  std::string output;  // stdout + stderr
};

// A shell command line (sh -c), its exit code and combined output (the command says 2>&1).
inline result run_shell(const std::string& cmd) {
  result r{0, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p)) r.output += buf.data();
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline result run_kf(const std::string& args) {
  std::string cmd =
      KF_EXE;  // appended, not a + b + c: GCC 12 warns falsely (-Warray-bounds) on that
  cmd.append(" ").append(args).append(" 2>&1");
  return run_shell(cmd);
}

// A TCP connection to 127.0.0.1:PORT (a file descriptor), or -1.
inline int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// kf's exit convention for an error (apps/kf/main.cpp): 2 for a usage error — the command line,
// or an option's value, whose message names the option first ("kf: error: --kernel: …") — and 1
// for bad data or a failure (the message names the file, the tensor, …).
inline int error_exit(const std::string& output) {
  return output.rfind("kf: error: --", 0) == 0 ? 2 : 1;
}

// The files a command's OUTPUT says it wrote: its last lines "wrote PATH", one per file (every
// command ends so, apps/kf/main.cpp), sorted. Empty when a line after them says anything else.
inline std::vector<std::string> written_lines(const std::string& output) {
  std::vector<std::string> lines, paths;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (auto it = lines.rbegin(); it != lines.rend() && it->rfind("wrote ", 0) == 0; ++it)
    paths.push_back(it->substr(6));
  std::sort(paths.begin(), paths.end());
  return paths;
}

// `kf serve --port 0`, started by the constructor: port is the one it prints on its first line
// of stdout ("… 127.0.0.1:PORT …"), or 0 when it did not start or print it. The destructor
// stops it with SIGTERM and reaps it.
struct kf_server {
  pid_t pid = -1;
  int port = 0;
  FILE* out = nullptr;  // the server's stdout
  kf_server() {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      execl(KF_EXE, KF_EXE, "serve", "--port", "0", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    out = fdopen(fds[0], "r");
    char line[1024];
    if (out && fgets(line, sizeof line, out)) {
      const std::string s(line);
      const auto p = s.find("127.0.0.1:");
      if (p != std::string::npos) port = std::stoi(s.substr(p + 10));
    }
  }
  kf_server(const kf_server&) = delete;
  kf_server& operator=(const kf_server&) = delete;
  ~kf_server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int st = 0;
      waitpid(pid, &st, 0);
    }
    if (out) fclose(out);
  }
};

}  // namespace kf::test
