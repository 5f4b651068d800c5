// kf — the kernelformer command line. One subcommand per file (cmd_*.cpp); errors are one line
// on stderr and a non-zero exit (1: bad input or failure, 2: bad command line).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/mapped_file.hpp"
#include "kernelformer/suggest.hpp"

namespace {

// The subcommands, the version flag and the examples of `kf --help`.
void describe(CLI::App& app) {
  app.require_subcommand(1);
  // What the launcher (kf/launcher.cpp) set for OpenMP before this program started.
  const char* omp = std::getenv("KF_OMP_APPLIED");
  app.set_version_flag("--version", std::string("kf 0.1.0\nOpenMP settings made by kf: ") +
                                        (omp != nullptr ? omp : "none (run without the launcher)"));
  app.footer(
      "Examples:\n"
      "  kf demo                                   # seed-001 smoothing vs attention table\n"
      "  kf attend --queries Q.npy --keys K.npy --values V.npy --out OUT.npy\n"
      "  kf smooth data.csv --x x --y y --out fit.csv --plot fit.svg\n"
      "  kf kde data.csv --x x --bandwidth cv-ml --out density.csv\n"
      "  kf classify data.csv --x a,b --y label --plot regions.svg\n"
      "  kf train lm --config tiny --save lm.safetensors   # a small language model\n"
      "  kf sample --model lm.safetensors --prompt \"The \"\n"
      "  kf attention --model lm.safetensors --out cat.png\n"
      "  kf train seq2seq --task reverse --save rev.safetensors   # an encoder-decoder\n"
      "  kf predict --model rev.safetensors --text \"hello42\"\n"
      "  kf inspect lm.safetensors                 # every head read as a kernel smoother\n"
      "  kf attend --help                          # every option of a subcommand");
  kf::cli::add_attend(app);
  kf::cli::add_demo(app);
  kf::cli::add_smooth(app);
  kf::cli::add_kde(app);
  kf::cli::add_classify(app);
  kf::cli::add_inspect(app);
  kf::cli::add_predict(app);
  kf::cli::add_train(app);
  kf::cli::add_sample(app);
  kf::cli::add_attention(app);
  kf::cli::add_serve(app);
  kf::cli::add_report(app);
  kf::cli::add_experiment(app);
}

// Under mpirun: false (after one line from rank 0) for a subcommand that does not share its work
// over the ranks (docs/scale-out.md).
bool runs_under_mpi(int argc, char** argv) {
  if (kf::dist::size() <= 1 || argc <= 1) return true;
  const std::string sub = argv[1];
  if (sub != "attend" && sub != "train" && sub != "smooth" && sub != "kde" && sub != "--help" &&
      sub != "-h") {
    if (kf::dist::is_root())
      fmt::print(stderr,
                 "kf: error: 'kf {}' does not run under mpirun; these do: kf attend, kf smooth, "
                 "kf kde, kf train periodic, kf train lm (docs/scale-out.md)\n",
                 sub);
    return false;
  }
  return true;
}

// The subcommands of APP, as names and as "  name   description" lines.
std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}
std::string subcommand_list(const CLI::App& app) {
  std::string out;
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string d = sub->get_description();
    out += fmt::format("  {:<11} {}\n", sub->get_name(), d.substr(0, d.find('\n')));
  }
  return out;
}

std::string clipped(const std::string& s) { return s.size() > 80 ? s.substr(0, 77) + "..." : s; }

// CLI11 would only say that a subcommand is required: false (after one line naming the one that
// is not known, the closest known one and the known ones) when argv[1] is not an option and not
// a subcommand.
bool known_subcommand(const CLI::App& app, int argc, char** argv) {
  const auto names = subcommand_names(app);
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    const std::string name = argv[1], near = kf::suggest_name(name, names);
    fmt::print(stderr,
               "kf: error: unknown subcommand '{}'{} (one of: {})\nRun 'kf --help' for the "
               "options and examples.\n",
               clipped(name), near.empty() ? "" : fmt::format("; did you mean '{}'?", near),
               fmt::format("{}", fmt::join(names, ", ")));
    return false;
  }
  return true;
}

// The deepest subcommand the parse reached (kf train series → series), or app itself.
const CLI::App* deepest(const CLI::App& app) {
  const CLI::App* at = &app;
  for (;;) {
    const auto subs = at->get_subcommands();
    if (subs.empty()) return at;
    at = subs.front();
  }
}

// "did you mean" for the first argument CLI11 did not expect: an option of the subcommand the
// parse reached, or one of its subcommands.
std::string unexpected_hint(const CLI::App& at, const std::string& message) {
  const auto colon = message.rfind(": ");
  if (colon == std::string::npos) return "";
  std::string word = message.substr(colon + 2);
  word = word.substr(0, word.find(' '));
  word = word.substr(0, word.find('='));
  std::vector<std::string> names;
  if (word.starts_with("-")) {
    for (const CLI::Option* o : at.get_options())
      for (const auto& n : o->get_lnames()) names.push_back("--" + n);
  } else {
    names = subcommand_names(at);
  }
  const std::string near = kf::suggest_name(word, names);
  return near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near);
}

// An exception's message for a user: never a bare C++ name (std::bad_alloc, "stoull").
std::string plain(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr)
    return "out of memory: the input or the model needs more memory than this machine has";
  const std::string what = e.what();
  if (what.starts_with("sto") && what.find(' ') == std::string::npos)
    return "a number could not be read (" + what + "); check the numbers given";
  return what;
}

// A command ends with one line per file it wrote (unless --quiet), whatever wrote it: the list
// the atomic writer's commits made (kf::cli::written_files).
void print_written(const CLI::App& app) {
  const CLI::Option* quiet = deepest(app)->get_option_no_throw("--quiet");
  if (quiet != nullptr && quiet->count() > 0) return;
  for (const std::string& path : kf::cli::written_files()) fmt::print("wrote {}\n", path);
}

// Parses the command line and runs the subcommand; the exit code.
int parse_and_run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A bad command line: one line, then where the options are; exit 2.
    const CLI::App* at = deepest(app);
    std::string where;
    for (const CLI::App* a = at; a != nullptr; a = a->get_parent())
      where = a->get_name() + (where.empty() ? "" : " " + where);
    const std::string what = e.what();
    if (what.find("subcommand is required") != std::string::npos) {
      // An argument where the subcommand goes: a misspelled one (kf train seris).
      int depth = 0;
      for (const CLI::App* a = at; a->get_parent() != nullptr; a = a->get_parent()) ++depth;
      if (depth + 1 < argc && argv[depth + 1][0] != '-') {
        const auto names = subcommand_names(*at);
        const std::string near = kf::suggest_name(argv[depth + 1], names);
        fmt::print(stderr, "kf: error: unknown subcommand '{}' of '{}'{} (one of: {})\n",
                   clipped(argv[depth + 1]), where,
                   near.empty() ? "" : fmt::format("; did you mean '{}'?", near),
                   fmt::format("{}", fmt::join(names, ", ")));
        return 2;
      }
      fmt::print(stderr,
                 "kf: error: '{}' needs one of these subcommands:\n{}Run '{} SUBCOMMAND "
                 "--help' for its options and examples.\n",
                 where, subcommand_list(*at), where);
      return 2;
    }
    fmt::print(stderr, "kf: error: {}{}\nRun '{} --help' for the options and examples.\n", what,
               unexpected_hint(*at, what), where);
    return 2;
  } catch (const kf::cli::mpi_refusal& e) {
    // Every rank found it before any reduction: one line, from rank 0.
    if (kf::dist::is_root()) fmt::print(stderr, "kf: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    // Under mpirun the other ranks may wait in a collective: end them all.
    const std::string rank = kf::dist::where();
    fmt::print(stderr, "kf{}: error: {}\n", rank.empty() ? "" : " (" + rank + ")", plain(e));
    if (kf::dist::size() > 1) kf::dist::abort(1);
    // One convention: a bad option value (the message names the option first) is a usage
    // error, exit 2, like a parse error; a bad file or a failure is exit 1.
    const bool usage = dynamic_cast<const kf::cli::user_error*>(&e) != nullptr &&
                       std::string_view(e.what()).starts_with("--");
    return usage ? 2 : 1;
  }
  print_written(app);
  return 0;
}

// The launcher (kf/launcher.cpp) lowered the thread count because other processes keep the
// cores busy: one line says so on a terminal (not with --quiet or --help; a script's or a test's
// output stays the same on a busy machine), so a slow run is not a mystery.
void say_busy_machine(int argc, char** argv) {
  const char* note = std::getenv("KF_BUSY_NOTE");
  if (note == nullptr || isatty(STDERR_FILENO) == 0) return;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--quiet" || std::string_view(argv[i]) == "--help" ||
        std::string_view(argv[i]) == "-h")
      return;
  fmt::print(stderr, "kf: a busy machine: {}\n", note);
}

}  // namespace

int main(int argc, char** argv) {
  // Training allocates and frees activation matrices of tens of MB every step. By default glibc
  // serves those with mmap and returns them to the kernel on free, so every step pays page
  // faults and the kernel's zeroing (a quarter of a training epoch, measured with perf). Keep
  // freed memory in the heap instead: the process reuses it at memset speed.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Inputs are mapped read-only (io/mapped_file.hpp): a file truncated under us is one clear
  // line and exit 1, not a bus error.
  kf::io::mapped_file_guard();
  // Under `mpirun -np N` this process is one of N ranks (kernelformer/dist/mpi.hpp); alone, the
  // session does nothing.
  const kf::dist::session mpi(&argc, &argv);
  say_busy_machine(argc, argv);
  CLI::App app{
      "kf — attention is Nadaraya-Watson kernel smoothing.\n"
      "One primitive, out_i = sum_j K(q_i,k_j) v_j / sum_j K(q_i,k_j), serves kernel regression\n"
      "and every attention head.",
      "kf"};
  describe(app);
  // Bare `kf`: the subcommands (a usage error, exit 2). `kf help SUB …` is `kf SUB … --help`.
  if (argc == 1) {
    fmt::print(stderr,
               "kf: attention is Nadaraya-Watson kernel smoothing. Subcommands:\n{}Run 'kf "
               "SUBCOMMAND --help' for its options and examples, 'kf --help' for more.\n",
               subcommand_list(app));
    return 2;
  }
  std::vector<char*> args(argv, argv + argc);
  std::string help_flag = "--help";
  if (std::string_view(argv[1]) == "help") {
    args.erase(args.begin() + 1);
    args.push_back(help_flag.data());
    argc = static_cast<int>(args.size());
    argv = args.data();
  }
  kf::cli::set_command_line(argc, argv);
  if (!runs_under_mpi(argc, argv) || !known_subcommand(app, argc, argv)) return 2;
  return parse_and_run(app, argc, argv);
}
