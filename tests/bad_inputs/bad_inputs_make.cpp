// Makes the bad-input suite's inputs once before its tests run (ctest fixture bad_inputs).
#include <cstdio>
#include <exception>

#include "inputs.hpp"
#include "test_paths.hpp"

int main() {
  try {
    kf::bad::make_inputs(KF_BAD_INPUTS_DIR);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bad_inputs_make: %s\n", e.what());
    return 1;
  }
  return 0;
}
