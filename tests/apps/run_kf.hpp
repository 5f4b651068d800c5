// Runs the kf binary from tests: its exit code and combined output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace kf::test {

struct result {
  int code;
  std::string output;  // stdout + stderr
};

result run_kf(const std::string& args) {
  std::string cmd =
      KF_EXE;  // appended, not a + b + c: GCC 12 warns falsely (-Warray-bounds) on that
  cmd.append(" ").append(args).append(" 2>&1");
  result r{0, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p)) r.output += buf.data();
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace kf::test
