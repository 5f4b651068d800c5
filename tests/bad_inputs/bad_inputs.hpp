// The bad-input suite's harness (tests/bad_inputs/): one case = one kf command line that must
// fail cleanly. Every case asserts: a non-zero exit that is an exit status, not a signal (no
// crash); every expected fragment (the file, row, column, option or field at fault) in the
// message; and that no output was created or modified — each output path is pre-filled with a
// sentinel before the run and compared after, and the case's folder holds nothing else after
// it (no partial file, no stray temporary, no empty --out folder).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>
#include "test_paths.hpp"

namespace kf::bad {

struct bad_case {
  std::string name;                  // a gtest name: letters, digits, underscores
  std::string args;                  // kf's arguments; {in} = the inputs folder, {out} = the case's
  std::vector<std::string> expect;   // fragments the message must contain ({in}/{out} expanded)
  std::vector<std::string> outputs;  // files under {out} pre-filled with a sentinel
};

inline const std::string kSentinel = "SENTINEL: kf must not touch this file\n";

inline std::string expand(std::string s, const std::string& in, const std::string& out) {
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"{in}", in}, {"{out}", out}})
    for (std::size_t p; (p = s.find(key)) != std::string::npos;) s.replace(p, key.size(), value);
  return s;
}

struct run_result {
  int status = 0;  // raw wait status
  std::string output;
};

inline run_result run_kf_raw(const std::string& args) {
  std::string cmd = KF_EXE;  // appended: GCC 12 warns falsely (-Warray-bounds) on a + b + c
  cmd.append(" ").append(args).append(" 2>&1 </dev/null");
  run_result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p)) r.output += buf.data();
  r.status = p ? pclose(p) : -1;
  return r;
}

}  // namespace kf::bad
