// Where a test finds the build's kf, the fixtures and the bad-input suite's inputs: from the test
// executable's own path at run time, not from absolute paths compiled in — so a test compiled in
// one clone is the same object in every clone, and ccache serves it to all of them
// (cmake/kf_ccache.cmake). The build folder is the nearest ancestor of the executable holding
// CMakeCache.txt; the source folder is the CMAKE_HOME_DIRECTORY it records. An environment
// variable of the same name (KF_EXE, KF_FIXTURES_DIR, KF_BINARY_DIR, KF_BAD_INPUTS_DIR) wins.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kf::test {

struct build_paths {
  std::string binary, source, kf, fixtures, bad_inputs;
};

inline const build_paths& paths() {
  static const build_paths p = [] {
    namespace fs = std::filesystem;
    build_paths b;
    std::error_code ec;
    fs::path at = fs::read_symlink("/proc/self/exe", ec).parent_path();
    while (!at.empty() && !fs::exists(at / "CMakeCache.txt", ec)) {
      if (at == at.root_path()) {
        at.clear();
        break;
      }
      at = at.parent_path();
    }
    b.binary = at.string();
    std::ifstream cache(at / "CMakeCache.txt");
    const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    for (std::string line; std::getline(cache, line);)
      if (line.rfind(key, 0) == 0) b.source = line.substr(key.size());
    b.kf = b.binary + "/kf";
    b.fixtures = b.source + "/tests/fixtures";
    b.bad_inputs = b.binary + "/tests/bad_inputs/data/in";
    const auto env = [](const char* name, std::string& v) {
      if (const char* e = std::getenv(name); e != nullptr && *e != '\0') v = e;
    };
    env("KF_BINARY_DIR", b.binary);
    env("KF_EXE", b.kf);
    env("KF_FIXTURES_DIR", b.fixtures);
    env("KF_BAD_INPUTS_DIR", b.bad_inputs);
    return b;
  }();
  return p;
}

}  // namespace kf::test

#define KF_EXE (::kf::test::paths().kf.c_str())
#define KF_FIXTURES_DIR (::kf::test::paths().fixtures.c_str())
#define KF_BINARY_DIR (::kf::test::paths().binary.c_str())
#define KF_BAD_INPUTS_DIR (::kf::test::paths().bad_inputs.c_str())
