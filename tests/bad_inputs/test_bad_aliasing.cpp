// Outputs that name inputs, two outputs on one path, and temporaries planted by an adversary.
// Every aliasing case runs the real kf on real inputs copied into its own folder and asserts: a
// non-zero exit (not a signal), a message that says the output is an input (or shared by two
// outputs), every file in the folder byte for byte as before, nothing added. The temporaries'
// case plants symbolic links at every name the writer could pick and checks that none is
// followed: the link's target keeps its bytes and the output is a regular file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "inputs.hpp"

namespace kf::bad {
namespace {

struct alias_case {
  std::string name;
  std::vector<std::string> copy;  // input files copied from the inputs folder into {d}
  std::string args;               // {d} = the case's folder, {in} = the inputs folder
  std::string expect;             // a fragment of the message
};

void PrintTo(const alias_case& c, std::ostream* os) { *os << "kf " << c.args; }

const char* const kIsInput = "is also an input";
const char* const kTwo = "two outputs cannot share a path";

std::vector<alias_case> alias_cases() {
  const std::string m = "--model {in}/sin.safetensors ";
  return {
      {"smooth_out_is_data",
       {"data.csv"},
       "smooth {d}/data.csv --x x --y y --out {d}/data.csv",
       kIsInput},
      {"smooth_out_other_spelling",
       {"data.csv"},
       "smooth {d}/data.csv --x x --y y --out {d}/sub/../data.csv",
       kIsInput},
      {"smooth_out_hard_link",
       {"data.csv"},
       "smooth {d}/data.csv --x x --y y --summary {d}/link.json",
       kIsInput},
      {"smooth_plot_and_out",
       {"data.csv"},
       "smooth {d}/data.csv --x x --y y --out {d}/f.csv --loo {d}/./f.csv",
       kTwo},
      {"kde_out_is_at",
       {"data.csv"},
       "kde {d}/data.csv --x x --at {d}/at.csv --out {d}/at.csv",
       kIsInput},
      {"kde_out_is_data", {"data.csv"}, "kde {d}/data.csv --x x --out={d}/data.csv", kIsInput},
      {"classify_out_is_data",
       {"data.csv"},
       "classify {d}/data.csv --x x --y y --out {d}/data.csv",
       kIsInput},
      {"attend_out_is_values",
       {"q.npy", "k.npy", "v.npy"},
       "attend -q {d}/q.npy -k {d}/k.npy -v {d}/v.npy -o {d}/v.npy",
       kIsInput},
      {"attend_weights_is_query",
       {"q.npy", "k.npy", "v.npy"},
       "attend -q {d}/q.npy -k {d}/k.npy -v {d}/v.npy -o {d}/o.npy --weights {d}/q.npy",
       kIsInput},
      {"attend_two_outputs",
       {"q.npy", "k.npy", "v.npy"},
       "attend -q {d}/q.npy -k {d}/k.npy -v {d}/v.npy -o {d}/x.npy --weights {d}/x.npy",
       kTwo},
      {"predict_out_is_input",
       {"x99.npy"},
       "predict " + m + "--input {d}/x99.npy --out {d}/x99.npy",
       kIsInput},
      {"series_out_folder_holds_input",
       {"data.csv"},
       "train series {d}/forecast.csv --y y --x x --window 4 --epochs 1 --out {d}",
       kIsInput},
  };
}

std::string expand_d(std::string s, const std::string& d) {
  for (std::size_t p; (p = s.find("{d}")) != std::string::npos;) s.replace(p, 3, d);
  return s;
}

std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& f : fs::recursive_directory_iterator(dir))
    if (f.is_regular_file())
      files[f.path().string()] = io::read_file(f.path().string());
    else if (!f.is_directory())
      files[f.path().string()] = "(not a regular file)";
  return files;
}

class Aliasing : public ::testing::TestWithParam<alias_case> {};

TEST_P(Aliasing, RefusedBeforeAnythingIsReplaced) {
  const alias_case& c = GetParam();
  const std::string in = inputs_dir(), d = in + "/../aliasing/" + c.name;
  fs::remove_all(d);
  fs::create_directories(d + "/sub");
  for (const auto& f : c.copy) fs::copy_file(in + "/" + f, d + "/" + f);
  if (c.name == "series_out_folder_holds_input") fs::rename(d + "/data.csv", d + "/forecast.csv");
  if (c.name == "smooth_out_hard_link") {
    fs::create_hard_link(d + "/data.csv", d + "/link.json");
  }
  if (c.name == "kde_out_is_at") put(d + "/at.csv", "x\n0.5\n1.5\n");
  const auto before = snapshot(d);
  const run_result r = run_kf_raw(expand(expand_d(c.args, d), in, d));
  ASSERT_TRUE(WIFEXITED(r.status)) << "killed by a signal\n" << r.output;
  EXPECT_NE(WEXITSTATUS(r.status), 0) << r.output;
  EXPECT_LT(WEXITSTATUS(r.status), 128) << r.output;
  EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
  EXPECT_LE(r.output.size(), 2000u) << r.output;
  EXPECT_EQ(snapshot(d), before) << "files changed, added or removed:\n" << r.output;
}

std::string alias_name(const ::testing::TestParamInfo<alias_case>& i) { return i.param.name; }
INSTANTIATE_TEST_SUITE_P(Outputs, Aliasing, ::testing::ValuesIn(alias_cases()), alias_name);

// A resumed run may save over the checkpoint it resumed from: that is not aliasing.
TEST(AliasingAllowed, ResumeAndSaveOnOneCheckpoint) {
  const std::string in = inputs_dir(), d = in + "/../aliasing/resume";
  fs::remove_all(d);
  fs::create_directories(d);
  fs::copy_file(in + "/state.safetensors", d + "/state.safetensors");
  const run_result r =
      run_kf_raw("train periodic --config quick --epochs 2 --resume " + d +
                 "/state.safetensors --save " + d + "/state.safetensors --save-every 1 --quiet");
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << r.output;
}

// The name atomic_writer gives its temporaries (src/io/atomic_file.cpp): PATH.tmp.<host>.<pid>.<k>.
std::string host_tag() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string h(buf);
  for (char& c : h)
    if (c == '/' || c == '.') c = '_';
  return h;
}

TEST(Temporaries, APlantedSymbolicLinkIsNeverFollowed) {
  const std::string d = inputs_dir() + "/../aliasing/symlink";
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string victim = d + "/victim.txt", out = d + "/out.csv";
  put(victim, kSentinel);
  // Links at every name this process's writers could pick next (k counts over the process).
  const std::string prefix = out + ".tmp." + host_tag() + "." + std::to_string(::getpid()) + ".";
  for (int k = 0; k < 600; ++k) fs::create_symlink(victim, prefix + std::to_string(k));
  io::write_file_atomic(out, "x\n1\n");
  EXPECT_EQ(io::read_file(victim), kSentinel) << "the link's target was written";
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out))) << "the output is a link";
  EXPECT_EQ(io::read_file(out), "x\n1\n");
  std::size_t links = 0;
  for (const auto& f : fs::directory_iterator(d)) links += fs::is_symlink(f.symlink_status());
  EXPECT_EQ(links, 600u) << "a planted link was renamed or removed";
}

}  // namespace
}  // namespace kf::bad
