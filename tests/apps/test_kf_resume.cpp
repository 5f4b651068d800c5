// Resumable training, end to end with real processes: a run of N epochs (iterations) straight
// through, against the same run killed with SIGKILL right after its first --save-every
// checkpoint appears and then continued with --resume: the losses (every epoch's or
// iteration's) and the final weights are bit-identical. Also: the checkpoint is a valid
// safetensors file that keeps the model loadable, and resumes with other options are refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/train_state.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> w;
  for (std::string x; is >> x;) w.push_back(x);
  return w;
}

// Starts kf with ARGS, waits until FILE exists, then kills it with SIGKILL. Returns true when
// the process died of that signal (false: it finished first, so nothing was interrupted).
bool run_and_kill_after(const std::string& args, const std::string& file) {
  std::string line = KF_EXE;  // appended: GCC 12 warns falsely (-Warray-bounds) on a + b + c
  const auto argv_s = words(line.append(" ").append(args));
  std::vector<char*> argv;
  for (const auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* null = std::fopen("/dev/null", "w");
    ::dup2(::fileno(null), 1);
    ::dup2(::fileno(null), 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (!fs::exists(file)) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// The train_loss column of a loss.csv (seconds differ between runs).
std::string loss_column(const std::string& path) {
  std::istringstream is(io::read_file(path));
  std::string line, out;
  while (std::getline(is, line)) {
    const auto a = line.find(','), b = line.find(',', a + 1);
    out += line.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1) + "\n";
  }
  return out;
}

// The two checkpoints hold the same weights and optimizer state, bit for bit, and the same
// losses (everything but the seconds, which time the runs).
void expect_same_run(const std::string& a, const std::string& b) {
  const model::checkpoint ca = model::checkpoint_load(a), cb = model::checkpoint_load(b);
  ASSERT_EQ(ca.tensors.size(), cb.tensors.size());
  for (const auto& t : ca.tensors) {
    if (t.name == "kf_train.seconds" || t.name == "kf_train.evals") continue;
    const auto* u = cb.find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_TRUE(t.values == u->values && t.values_f64 == u->values_f64 &&
                t.values_i64 == u->values_i64)
        << t.name << " differs";
  }
  EXPECT_EQ(ca.metadata.at("kf_train.rng"), cb.metadata.at("kf_train.rng"));
}

struct dirs {
  fs::path root;
  explicit dirs(const std::string& tag)
      : root(fs::temp_directory_path() / ("kf_resume_" + tag + std::to_string(::getpid()))) {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~dirs() { fs::remove_all(root); }
  std::string operator/(const std::string& f) const { return (root / f).string(); }
};

TEST(KfResume, PeriodicKilledAfterACheckpointResumesBitIdentically) {
  const dirs d("periodic");
  const std::string common = "train periodic --config quick --epochs 8 --batch 128 --seed 3 ";
  auto r = run_kf(common + "--save " + (d / "a.safetensors") + " --save-every 100 --out " +
                  (d / "a") + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string ck = d / "b.safetensors";
  ASSERT_TRUE(
      run_and_kill_after(common + "--save " + ck + " --save-every 2 --out " + (d / "b"), ck))
      << "the run finished before it could be killed";
  ASSERT_FALSE(fs::exists(d / "b")) << "a killed run wrote its --out folder";
  // The checkpoint: a model kf predict can load, plus the training state.
  const model::checkpoint c = model::checkpoint_load(ck);
  ASSERT_NE(c.find("kf_train.exp_avg"), nullptr);
  const auto st = model::train_state_decode(c, c.find("kf_train.exp_avg")->shape[0]);
  ASSERT_TRUE(st.has_value());
  EXPECT_GE(st->done, 2);
  EXPECT_LT(st->done, 8);
  r = run_kf(common + "--save " + ck + " --save-every 2 --resume " + ck + " --out " + (d / "b") +
             " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(loss_column(d / "a/loss.csv"), loss_column(d / "b/loss.csv"));
  EXPECT_EQ(io::read_file(d / "a/prediction.csv"), io::read_file(d / "b/prediction.csv"));
  expect_same_run(d / "a.safetensors", ck);
}

TEST(KfResume, LanguageModelKilledAfterACheckpointResumesBitIdentically) {
  const dirs d("lm");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat on the mat and the dog ran. ";
  io::write_file_atomic(d / "c.txt", text);
  const std::string common = "train lm --corpus " + (d / "c.txt") + " --iters 30 --seed 2 ";
  auto r = run_kf(common + "--save " + (d / "a.safetensors") + " --save-every 100 --out " +
                  (d / "a") + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string ck = d / "b.safetensors";
  ASSERT_TRUE(run_and_kill_after(common + "--save " + ck + " --save-every 5", ck))
      << "the run finished before it could be killed";
  r = run_kf(common + "--save " + ck + " --save-every 5 --resume " + ck + " --out " + (d / "b") +
             " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::read_file(d / "a/loss.csv"), io::read_file(d / "b/loss.csv"));
  EXPECT_EQ(io::read_file(d / "a/sample.txt"), io::read_file(d / "b/sample.txt"));
  expect_same_run(d / "a.safetensors", ck);
}

TEST(KfResume, OtherOptionsAndFinalModelsAreRefused) {
  const dirs d("refuse");
  const std::string ck = d / "c.safetensors";
  auto r = run_kf("train periodic --config quick --epochs 3 --save " + ck + " --save-every 1");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_kf("train periodic --config quick --epochs 3 --batch 32 --resume " + ck);
  EXPECT_EQ(r.code, test::error_exit(r.output)) << r.output;
  EXPECT_NE(r.output.find("--batch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(ck), std::string::npos) << r.output;
  const std::string lean = d / "lean.safetensors";  // a final model without --save-every
  r = run_kf("train periodic --config quick --epochs 1 --save " + lean);
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_kf("train periodic --config quick --epochs 3 --resume " + lean);
  EXPECT_EQ(r.code, test::error_exit(r.output)) << r.output;
  EXPECT_NE(r.output.find("no training state"), std::string::npos) << r.output;
  // A training-state field edited in place (same length, so the header stays valid): the error
  // names the file and the field.
  std::string bytes = io::read_file(ck);
  const std::string key = "\"kf_train.done\":\"";
  const auto at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  bytes[at + key.size()] = 'x';
  const std::string edited = d / "edited.safetensors";
  io::write_file_atomic(edited, bytes);
  r = run_kf("train periodic --config quick --epochs 3 --save-every 1 --resume " + edited +
             " --save " + (d / "e2.safetensors"));
  EXPECT_EQ(r.code, test::error_exit(r.output)) << r.output;
  EXPECT_NE(r.output.find("edited.safetensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'kf_train.done'"), std::string::npos) << r.output;
  r = run_kf("train periodic --config quick --save-every 2");
  EXPECT_EQ(r.code, test::error_exit(r.output)) << r.output;
  EXPECT_NE(r.output.find("--save-every needs --save"), std::string::npos) << r.output;
}

// A finished run resumed trains nothing, says so, and writes its --save again with the training
// state still in it (the same weights and optimizer state): it can be resumed a second time, and
// a run extended from it continues. Periodic (epochs) and the language model (iterations).
void expect_finished_run_resumes(const std::string& common, const std::string& unit) {
  const dirs d("finished" + unit);
  const std::string ck = d / "f.safetensors", first = d / "first.safetensors";
  auto r = run_kf(common + "--save " + ck + " --save-every 1 --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  fs::copy_file(ck, first);
  for (int again = 0; again < 2; ++again) {
    r = run_kf(common + "--save " + ck + " --resume " + ck);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("already finished its 2 " + unit), std::string::npos) << r.output;
    expect_same_run(first, ck);
  }
}

TEST(KfResume, AFinishedPeriodicRunResumedKeepsItsTrainingState) {
  expect_finished_run_resumes("train periodic --config quick --epochs 2 --seed 1 ", "epochs");
}

TEST(KfResume, AFinishedLanguageModelRunResumedKeepsItsTrainingState) {
  const dirs d("finished_corpus");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat on the mat and the dog ran. ";
  io::write_file_atomic(d / "c.txt", text);
  expect_finished_run_resumes("train lm --corpus " + (d / "c.txt") + " --iters 2 --seed 2 ",
                              "iterations");
}

}  // namespace
}  // namespace kf
